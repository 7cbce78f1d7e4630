"""What a scan does with each open kernelbot PR, as a pure function of the PR, the base commit it looks at
and the kernels the ledger knows: no server, no disk."""

from __future__ import annotations

from pathlib import Path

from kernelbot.forge.marker import Marker, with_marker
from kernelbot.forge.types import PRState, PullRequest
from kernelbot.scan.ledger import DONE, FAILED, KernelRecord, RunRecord
from kernelbot.scan.refresh import RefreshAction, hands_off_comment, plan_refresh, someone_else_pushed

TARGET = "minisglang.layers.layernorm:RMSNorm.forward_native"
OLD_BASE, NEW_BASE = "a" * 40, "b" * 40
PUSHED = "c" * 40
MARKER = Marker("rms-norm-forward-native", "k1" * 32, OLD_BASE, "0.1.0", commit=PUSHED)


def open_pr(head: str = PUSHED, marker: Marker = MARKER) -> PullRequest:
    return PullRequest(
        7, PRState.OPEN, "t", with_marker("b", marker), "kernelbot/rms-norm-forward-native", head, "main", "u"
    )


def kernel(tmp_path: Path, h: str, score: float) -> KernelRecord:
    source = tmp_path / f"{h}.py"
    source.write_text("def rms_norm_forward_native(x):\n    return x\n")
    return KernelRecord(h * 32, TARGET, str(tmp_path), str(source), score, None, "triton-cuda", OLD_BASE)


def plan(pr: PullRequest, base: str, **known: object):  # type: ignore[no-untyped-def]
    known.setdefault("target", TARGET)
    known.setdefault("pr_kernel", None)
    known.setdefault("best_kernel", None)
    return plan_refresh(pr, base_sha=base, **known)  # type: ignore[arg-type]


def test_same_base_and_no_better_kernel_is_up_to_date(tmp_path: Path) -> None:
    mine = kernel(tmp_path, "k1", 1.4)
    result = plan(open_pr(), OLD_BASE, pr_kernel=mine, best_kernel=mine)
    assert result.action is RefreshAction.UP_TO_DATE and "up to date" in result.reason


def test_a_moved_base_refreshes_seeded_with_the_prs_kernel(tmp_path: Path) -> None:
    mine = kernel(tmp_path, "k1", 1.4)
    result = plan(open_pr(), NEW_BASE, pr_kernel=mine, best_kernel=mine)
    assert result.action is RefreshAction.REFRESH and result.target == TARGET
    assert f"the base moved from {OLD_BASE[:12]} to {NEW_BASE[:12]}" == result.reason
    assert result.seed == Path(mine.source_file)


def test_a_better_kernel_from_a_later_run_refreshes(tmp_path: Path) -> None:
    mine, better = kernel(tmp_path, "k1", 1.4), kernel(tmp_path, "k2", 1.9)
    result = plan(open_pr(), OLD_BASE, pr_kernel=mine, best_kernel=better)
    assert result.action is RefreshAction.REFRESH and result.seed == Path(better.source_file)
    assert "scores 1.900, above the PR's 1.400" in result.reason
    # A kernel that scores no higher is not a reason to push.
    same = kernel(tmp_path, "k3", 1.4)
    assert plan(open_pr(), OLD_BASE, pr_kernel=mine, best_kernel=same).action is RefreshAction.UP_TO_DATE
    # Without a record of the PR's own kernel (a lost ledger) no kernel counts as better.
    assert plan(open_pr(), OLD_BASE, best_kernel=better).action is RefreshAction.UP_TO_DATE


def test_someone_elses_push_means_hands_off_whatever_changed(tmp_path: Path) -> None:
    foreign = open_pr(head="f" * 40)
    assert someone_else_pushed(foreign) and not someone_else_pushed(open_pr())
    result = plan(foreign, NEW_BASE, best_kernel=kernel(tmp_path, "k2", 9.0))
    assert result.action is RefreshAction.HANDS_OFF and "someone else pushed" in result.reason
    comment = hands_off_comment(foreign)
    assert "will not push to this branch again" in comment and PUSHED[:12] in comment and "f" * 12 in comment


def test_a_marker_without_a_pushed_commit_cannot_tell_and_is_not_hands_off() -> None:
    unpushed = Marker("rms-norm-forward-native", "k1" * 32, OLD_BASE, "0.1.0")
    assert not someone_else_pushed(open_pr(head="f" * 40, marker=unpushed))


def test_unknown_function_and_an_earlier_failure_wait() -> None:
    assert plan(open_pr(), NEW_BASE, target=None).action is RefreshAction.UNKNOWN
    failed = RunRecord("r", TARGET, NEW_BASE, "refresh", FAILED, "tests broke", "", "", None, 1.0, 2.0)
    result = plan(open_pr(), NEW_BASE, runs_on_base=[failed])
    assert result.action is RefreshAction.RETRY_LATER and "tests broke" in result.reason
    done = RunRecord("r", TARGET, NEW_BASE, "refresh", DONE, "", "k", "updated", 7, 1.0, 2.0)
    assert plan(open_pr(), NEW_BASE, runs_on_base=[done]).action is RefreshAction.REFRESH
