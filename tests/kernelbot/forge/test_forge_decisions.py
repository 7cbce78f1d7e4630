"""The decision table as pure functions of (PRs the forge holds, the new proposal): no server."""

from __future__ import annotations

from kernelbot.forge.decisions import Action, decide
from kernelbot.forge.marker import Marker, with_marker
from kernelbot.forge.types import PRState, PullRequest

BRANCH = "kernelbot/silu-and-mul"
BASE = "b" * 40
NEW = Marker(op="silu-and-mul", kernel_hash="k1" * 32, base_sha=BASE, tool="0.1.0")


def _pr(number: int, state: PRState, marker: Marker | None, branch: str = BRANCH) -> PullRequest:
    body = with_marker("body", marker) if marker else "a PR a person wrote"
    return PullRequest(number, state, "t", body, branch, "s" * 40, "main", f"http://x/pull/{number}")


def _kernel(h: str, base: str = BASE, op: str = "silu-and-mul") -> Marker:
    return Marker(op=op, kernel_hash=h * 32, base_sha=base, tool="0.1.0")


def test_nothing_there_opens() -> None:
    decision = decide(NEW, BRANCH, [], [])
    assert decision.action is Action.OPEN and decision.pr is None
    assert "no PR for silu-and-mul yet" in decision.reason


def test_the_same_kernel_on_the_same_base_is_skipped() -> None:
    open_pr = _pr(7, PRState.OPEN, NEW)
    decision = decide(NEW, BRANCH, [open_pr], [open_pr])
    assert decision.action is Action.SKIP and decision.pr == open_pr
    assert "#7 already carries kernel" in decision.reason


def test_a_changed_kernel_or_base_updates_the_open_pr() -> None:
    old = _pr(7, PRState.OPEN, _kernel("k0"))
    decision = decide(NEW, BRANCH, [old], [old])
    assert decision.action is Action.UPDATE and decision.pr == old
    assert "kernel k0k0" in decision.reason
    moved = _pr(7, PRState.OPEN, _kernel("k1", base="a" * 40))
    decision = decide(NEW, BRANCH, [moved], [moved])
    assert decision.action is Action.UPDATE and "base aaaaaaaaaaaa -> bbbbbbbbbbbb" in decision.reason


def test_a_kernel_closed_unmerged_is_never_proposed_again() -> None:
    closed = _pr(3, PRState.CLOSED, NEW)
    decision = decide(NEW, BRANCH, [closed], [])
    assert decision.action is Action.REFUSE and decision.pr == closed
    assert "closed without merging" in decision.reason and "never proposes" in decision.reason
    # Even on another base, and even when a newer PR for the op is open.
    elsewhere = Marker(op=NEW.op, kernel_hash=NEW.kernel_hash, base_sha="c" * 40, tool="0.2.0")
    newer = _pr(9, PRState.OPEN, _kernel("k2"))
    assert decide(elsewhere, BRANCH, [newer, closed], [newer]).action is Action.REFUSE


def test_another_kernel_after_a_closed_pr_may_open() -> None:
    closed = _pr(3, PRState.CLOSED, _kernel("k0"))
    decision = decide(NEW, BRANCH, [closed], [])
    assert decision.action is Action.OPEN and "#3" in decision.reason


def test_a_merged_kernel_is_skipped() -> None:
    merged = _pr(4, PRState.MERGED, NEW)
    decision = decide(NEW, BRANCH, [merged], [])
    assert decision.action is Action.SKIP and "merged in #4" in decision.reason


def test_at_most_one_open_kernelbot_pr_per_repository() -> None:
    other = _pr(11, PRState.OPEN, _kernel("zz", op="rmsnorm"), branch="kernelbot/rmsnorm")
    someone = _pr(12, PRState.OPEN, None, branch="feature/x")  # a person's PR does not count
    decision = decide(NEW, BRANCH, [], [other, someone])
    assert decision.action is Action.REFUSE and decision.pr == other
    assert "#11 (rmsnorm)" in decision.reason and "at most 1 open" in decision.reason
    assert decide(NEW, BRANCH, [], [other, someone], max_open=2).action is Action.OPEN
    assert decide(NEW, BRANCH, [], [someone]).action is Action.OPEN


def test_an_open_pr_on_the_branch_without_a_marker_is_left_alone() -> None:
    foreign = _pr(5, PRState.OPEN, None)
    decision = decide(NEW, BRANCH, [foreign], [foreign])
    assert decision.action is Action.REFUSE and "carries no kernelbot marker" in decision.reason


def test_the_newest_open_pr_on_the_branch_is_the_one_updated() -> None:
    older, newer = _pr(2, PRState.OPEN, _kernel("k0")), _pr(8, PRState.OPEN, _kernel("k0"))
    assert decide(NEW, BRANCH, [older, newer], [older, newer]).pr == newer
