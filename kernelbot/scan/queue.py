"""Where each ranked region stands, as pure functions of what the forge and the ledger hold: no server, no
disk. The loop asks `region_status` for every region, then fills the free proposal slots in ranking order.

    region_status(region, branch, prs, runs_on_base, open_pr=...) -> RegionStatus

First match wins:

 1. proposed  an open kernelbot PR on the region's branch: it is the proposal (refreshed apart)
 2. foreign   an open PR on the branch without a kernelbot marker: left alone
 3. merged    a kernelbot PR on the branch was merged: the region leaves the queue
 4. refused   a kernelbot PR on the branch was closed without merging: never proposed again
 5. failed    a target run of the region failed on this base commit: tried again when the base moves
 6. bundled   (without --open-pr) a run already wrote this region's bundle on this base commit
 7. eligible  otherwise: proposed when a slot is free
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from kernelbot.forge.types import PRState, PullRequest
from kernelbot.scan.ledger import DONE, FAILED, RunRecord
from kernelbot.scan.ranking import Region


class Standing(str, Enum):
    PROPOSED = "proposed"
    FOREIGN = "foreign"
    MERGED = "merged"
    REFUSED = "refused"
    FAILED = "failed"
    BUNDLED = "bundled"
    ELIGIBLE = "eligible"
    WAITING = "waiting"  # eligible, but no slot was free in this scan
    CHOSEN = "chosen"  # eligible, and this scan runs target on it


@dataclass(frozen=True)
class RegionStatus:
    region: Region
    branch: str
    standing: Standing
    reason: str
    pr: PullRequest | None = None

    def but(self, standing: Standing, reason: str) -> RegionStatus:
        return replace(self, standing=standing, reason=reason)


def region_status(
    region: Region,
    branch: str,
    prs: Sequence[PullRequest],
    runs_on_base: Sequence[RunRecord],
    *,
    open_pr: bool,
) -> RegionStatus:
    """The region's standing (see the module docstring); `prs` are the PRs on `branch` (every state),
    `runs_on_base` the ledger's runs of the region on this scan's base commit, newest first."""
    newest_first = sorted(prs, key=lambda pr: -pr.number)
    for pr in newest_first:
        if pr.state is PRState.OPEN:
            if pr.marker is None:
                return RegionStatus(
                    region,
                    branch,
                    Standing.FOREIGN,
                    f"#{pr.number} is open on {branch} without a kernelbot marker: kernelbot leaves it alone",
                    pr,
                )
            return RegionStatus(region, branch, Standing.PROPOSED, f"proposed in #{pr.number} (open)", pr)
    ours = [pr for pr in newest_first if pr.marker is not None]
    merged = next((pr for pr in ours if pr.state is PRState.MERGED), None)
    if merged is not None:
        return RegionStatus(
            region, branch, Standing.MERGED, f"merged in #{merged.number}: it leaves the queue", merged
        )
    closed = next((pr for pr in ours if pr.state is PRState.CLOSED), None)
    if closed is not None:
        return RegionStatus(
            region,
            branch,
            Standing.REFUSED,
            f"#{closed.number} was closed without merging (kernel {closed.marker.kernel_hash[:12]}): "  # type: ignore[union-attr]
            "kernelbot does not propose this region again",
            closed,
        )
    latest = runs_on_base[0] if runs_on_base else None
    if latest is not None and latest.status == FAILED:
        return RegionStatus(
            region,
            branch,
            Standing.FAILED,
            f"target failed on this base: {latest.error}; tried again when the base moves",
        )
    if latest is not None and latest.status == DONE and not open_pr:
        return RegionStatus(
            region,
            branch,
            Standing.BUNDLED,
            f"its bundle was written on this base ({latest.run_dir}/pr); run with --open-pr to propose it",
        )
    return RegionStatus(region, branch, Standing.ELIGIBLE, "not proposed yet")


def open_slots(
    open_kernelbot: Sequence[PullRequest], *, max_open: int, max_new: int, open_pr: bool
) -> tuple[int, str]:
    """How many new proposals this scan may make, and why not more."""
    if not open_pr:
        return max_new, f"this scan proposes at most {max_new} (--max-new-prs)"
    free = max(max_open - len(open_kernelbot), 0)
    if free < max_new:
        listed = ", ".join(f"#{pr.number}" for pr in open_kernelbot)
        return free, (
            f"kernelbot has {len(open_kernelbot)} open PR(s) in this repository ({listed}) and opens at most "
            f"{max_open} at a time (--max-open): it waits until one is merged or closed"
        )
    return max_new, f"this scan proposes at most {max_new} (--max-new-prs)"
