"""Each region's standing and the free proposal slots, as pure functions of the forge's PRs and the ledger's
runs: no server, no disk."""

from __future__ import annotations

from kernelbot.forge.marker import Marker, with_marker
from kernelbot.forge.types import PRState, PullRequest
from kernelbot.scan.ledger import DONE, FAILED, RunRecord
from kernelbot.scan.queue import Standing, open_slots, region_status
from kernelbot.scan.ranking import Region

REGION = Region("minisglang.layers.layernorm:RMSNorm.forward_native", "minisglang/layers/layernorm.py", True)
BRANCH = "kernelbot/rms-norm-forward-native"
BASE = "b" * 40
MARKER = Marker(op="rms-norm-forward-native", kernel_hash="k1" * 32, base_sha=BASE, tool="0.1.0")


def pr(number: int, state: PRState, marker: Marker | None = MARKER) -> PullRequest:
    body = with_marker("body", marker) if marker else "a PR a person wrote"
    return PullRequest(number, state, "t", body, BRANCH, "s" * 40, "main", f"http://x/pull/{number}")


def run(status: str, error: str = "") -> RunRecord:
    return RunRecord("/state/runs/r", REGION.target, BASE, "new", status, error, "", "", None, 1.0, 2.0)


def standing(
    prs: list[PullRequest], runs: list[RunRecord] = (), *, open_pr: bool = True
) -> tuple[Standing, str]:  # type: ignore[assignment]
    status = region_status(REGION, BRANCH, prs, list(runs), open_pr=open_pr)
    return status.standing, status.reason


def test_nothing_known_is_eligible() -> None:
    assert standing([]) == (Standing.ELIGIBLE, "not proposed yet")


def test_an_open_kernelbot_pr_is_the_proposal() -> None:
    kind, reason = standing([pr(3, PRState.CLOSED), pr(5, PRState.OPEN)])
    assert kind is Standing.PROPOSED and reason == "proposed in #5 (open)"


def test_an_open_pr_without_marker_is_left_alone() -> None:
    kind, reason = standing([pr(4, PRState.OPEN, marker=None)])
    assert kind is Standing.FOREIGN and "#4" in reason and "leaves it alone" in reason


def test_merged_leaves_the_queue_even_after_a_later_closed_one() -> None:
    kind, reason = standing([pr(2, PRState.MERGED), pr(6, PRState.CLOSED)])
    assert kind is Standing.MERGED and reason.startswith("merged in #2")


def test_closed_without_merging_is_never_proposed_again() -> None:
    kind, reason = standing([pr(2, PRState.CLOSED)], (run(DONE),))
    assert kind is Standing.REFUSED and "#2 was closed without merging" in reason
    assert MARKER.kernel_hash[:12] in reason and "does not propose this region again" in reason


def test_a_closed_pr_someone_else_wrote_does_not_refuse_the_region() -> None:
    assert standing([pr(2, PRState.CLOSED, marker=None)])[0] is Standing.ELIGIBLE


def test_a_failure_on_this_base_waits_for_the_base_to_move() -> None:
    kind, reason = standing([], (run(FAILED, "no kernel passed the evaluator"),))
    assert kind is Standing.FAILED and "no kernel passed the evaluator" in reason and "base moves" in reason


def test_a_bundle_on_this_base_is_not_redone_without_open_pr() -> None:
    assert standing([], (run(DONE),), open_pr=False)[0] is Standing.BUNDLED
    # With --open-pr a finished run's proposal is made (the forge decides what it comes to).
    assert standing([], (run(DONE),), open_pr=True)[0] is Standing.ELIGIBLE


def test_slots_are_what_max_open_leaves_free() -> None:
    one_open = [pr(5, PRState.OPEN)]
    slots, reason = open_slots(one_open, max_open=1, max_new=1, open_pr=True)
    assert slots == 0 and "1 open PR(s) in this repository (#5)" in reason and "--max-open" in reason
    assert open_slots(one_open, max_open=3, max_new=1, open_pr=True)[0] == 1
    assert open_slots(one_open, max_open=3, max_new=5, open_pr=True)[0] == 2
    assert open_slots([], max_open=1, max_new=0, open_pr=True)[0] == 0
    # Bundles are not PRs: only --max-new-prs limits them.
    assert open_slots(one_open, max_open=1, max_new=2, open_pr=False)[0] == 2
