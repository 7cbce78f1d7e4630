"""What to do with each open kernelbot PR at a scan, as a pure function of the PR (its marker and head), the
commit the scan looks at and the kernels the ledger knows:

 1. hands off   someone else pushed to the branch (its head is not the commit the marker says kernelbot
                pushed): one comment says so, and kernelbot never pushes there again
 2. up to date  it carries the best known kernel on the current base commit
 3. unknown     it needs a refresh, but which function it changes is not known here
 4. retry later a refresh on this base commit was tried and failed
 5. refresh     the base moved, or a later run found a kernel that scores higher: a fresh target run on
                the current base (seeded with the best kernel known) puts one new commit on the branch,
                pushed with a lease on kernelbot's last commit

A merged or closed PR is not refreshed: a merged region leaves the queue, a closed one is never proposed
again (kernelbot.scan.queue).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from kernelbot.forge.types import PullRequest
from kernelbot.scan.ledger import FAILED, KernelRecord, RunRecord

HANDS_OFF_TOPIC = "hands-off"


class RefreshAction(str, Enum):
    HANDS_OFF = "hands-off"
    UP_TO_DATE = "up-to-date"
    UNKNOWN = "unknown"
    RETRY_LATER = "retry-later"
    REFRESH = "refresh"


@dataclass(frozen=True)
class RefreshPlan:
    pr: PullRequest
    action: RefreshAction
    reason: str
    target: str | None = None  # the function the PR changes (module:Qualname)
    seed: Path | None = None  # the best kernel known: the fresh run's search starts from it


def someone_else_pushed(pr: PullRequest) -> bool:
    """The branch's head is not what kernelbot last pushed (a maintainer's fixup, a rebase by hand)."""
    marker = pr.marker
    return bool(marker and marker.commit and pr.head_sha and pr.head_sha != marker.commit)


def plan_refresh(
    pr: PullRequest,
    *,
    base_sha: str,
    target: str | None,
    pr_kernel: KernelRecord | None,
    best_kernel: KernelRecord | None,
    runs_on_base: Sequence[RunRecord] = (),
) -> RefreshPlan:
    """The plan for open kernelbot PR `pr` (see the module docstring). `pr_kernel` is the ledger's record
    of the kernel the PR carries (None when unknown: then no kernel counts as better), `best_kernel` the
    region's best-scoring kernel, `runs_on_base` the region's runs on `base_sha`, newest first."""
    marker = pr.marker
    assert marker is not None, "only kernelbot's PRs are refreshed"
    if someone_else_pushed(pr):
        return RefreshPlan(
            pr,
            RefreshAction.HANDS_OFF,
            f"someone else pushed to {pr.head_branch} (it is at {pr.head_sha[:12]}, kernelbot last pushed "
            f"{marker.commit[:12]}): kernelbot no longer touches it",
            target,
        )
    changes = []
    if marker.base_sha != base_sha:
        changes.append(f"the base moved from {marker.base_sha[:12]} to {base_sha[:12]}")
    better = (
        best_kernel is not None
        and pr_kernel is not None
        and best_kernel.kernel_hash != marker.kernel_hash
        and best_kernel.score > pr_kernel.score
    )
    if better:
        assert best_kernel is not None and pr_kernel is not None
        changes.append(
            f"kernel {best_kernel.kernel_hash[:12]} scores {best_kernel.score:.3f}, above the PR's "
            f"{pr_kernel.score:.3f}"
        )
    if not changes:
        return RefreshPlan(
            pr,
            RefreshAction.UP_TO_DATE,
            f"up to date: kernel {marker.kernel_hash[:12]} on base {marker.base_sha[:12]}",
            target,
        )
    reason = "; ".join(changes)
    if target is None:
        return RefreshPlan(
            pr,
            RefreshAction.UNKNOWN,
            f"needs a refresh ({reason}), but its function is in neither this scan's ranking nor the ledger",
        )
    if runs_on_base and runs_on_base[0].status == FAILED:
        return RefreshPlan(
            pr,
            RefreshAction.RETRY_LATER,
            f"needs a refresh ({reason}); the refresh on this base failed: {runs_on_base[0].error}",
            target,
        )
    seed_from = best_kernel if better else (pr_kernel or best_kernel)
    seed = Path(seed_from.source_file) if seed_from is not None else None
    return RefreshPlan(pr, RefreshAction.REFRESH, reason, target, seed if seed and seed.is_file() else None)


def hands_off_comment(pr: PullRequest) -> str:
    marker = pr.marker
    pushed = marker.commit[:12] if marker else "?"
    return (
        f"kernelbot found commits on `{pr.head_branch}` that it did not push (the branch is at "
        f"`{pr.head_sha[:12]}`; kernelbot last pushed `{pushed}`). It will not push to this branch again, so "
        "nothing added here is overwritten: a new base commit or a better kernel no longer updates this PR. "
        f"To hand the branch back to kernelbot, reset it to `{pushed}`; to stop it altogether, close the PR."
    )
