"""What to do with a new proposal, given the PRs the forge already holds: pure functions, no server.

    decide(new, branch_prs, open_prs, max_open=1) -> Decision

`branch_prs` are the PRs (every state) whose head is the proposal's branch `kernelbot/<op-slug>`;
`open_prs` are the repository's open PRs (any head). The rules, first match wins:

 1. refuse  a PR carrying this kernel hash was closed without merging: that kernel is never proposed again
 2. skip    a PR carrying this kernel hash was merged
 3. refuse  an open PR on the branch has no kernelbot marker: kernelbot leaves PRs it did not write alone
 4. skip    the open PR on the branch already carries this kernel on this base commit
 5. update  the open PR on the branch carries another kernel, or was verified on another base commit
 6. refuse  `max_open` other kernelbot PRs are already open in the repository
 7. open    otherwise
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from kernelbot.forge.marker import Marker
from kernelbot.forge.types import PRState, PullRequest

DEFAULT_MAX_OPEN = 1


class Action(str, Enum):
    OPEN = "open"
    UPDATE = "update"
    SKIP = "skip"
    REFUSE = "refuse"


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    pr: PullRequest | None = None  # the PR the decision is about (updated, skipped for, refused because of)


def _short(sha: str) -> str:
    return sha[:12]


def rejected_kernel(new: Marker, prs: Sequence[PullRequest]) -> PullRequest | None:
    """A PR that carried this kernel and was closed without merging."""
    return next(
        (
            pr
            for pr in prs
            if pr.state is PRState.CLOSED
            and pr.marker is not None
            and pr.marker.kernel_hash == new.kernel_hash
        ),
        None,
    )


def merged_kernel(new: Marker, prs: Sequence[PullRequest]) -> PullRequest | None:
    return next(
        (
            pr
            for pr in prs
            if pr.state is PRState.MERGED
            and pr.marker is not None
            and pr.marker.kernel_hash == new.kernel_hash
        ),
        None,
    )


def other_open_kernelbot_prs(branch: str, open_prs: Sequence[PullRequest]) -> list[PullRequest]:
    return [
        pr
        for pr in open_prs
        if pr.state is PRState.OPEN and pr.marker is not None and pr.head_branch != branch
    ]


def refresh_reason(old: Marker, new: Marker) -> str | None:
    """Why an open PR must be updated to carry `new`; None when it already does."""
    changes = []
    if old.kernel_hash != new.kernel_hash:
        changes.append(f"kernel {_short(old.kernel_hash)} -> {_short(new.kernel_hash)}")
    if old.base_sha != new.base_sha:
        changes.append(f"base {_short(old.base_sha)} -> {_short(new.base_sha)}")
    return ", ".join(changes) or None


def decide(
    new: Marker,
    branch: str,
    branch_prs: Sequence[PullRequest],
    open_prs: Sequence[PullRequest],
    *,
    max_open: int = DEFAULT_MAX_OPEN,
) -> Decision:
    """The action for proposal `new` on head branch `branch` (see the module docstring for the rules)."""
    known = [*branch_prs, *(pr for pr in open_prs if pr.number not in {p.number for p in branch_prs})]
    rejected = rejected_kernel(new, known)
    if rejected is not None:
        return Decision(
            Action.REFUSE,
            f"kernel {_short(new.kernel_hash)} was proposed in #{rejected.number}, which was closed without "
            "merging: kernelbot never proposes a rejected kernel again",
            rejected,
        )
    merged = merged_kernel(new, known)
    if merged is not None:
        return Decision(
            Action.SKIP, f"kernel {_short(new.kernel_hash)} was merged in #{merged.number}", merged
        )

    open_here = sorted(
        (pr for pr in branch_prs if pr.state is PRState.OPEN), key=lambda pr: pr.number, reverse=True
    )
    if open_here:
        current = open_here[0]
        if current.marker is None:
            return Decision(
                Action.REFUSE,
                f"#{current.number} is open on branch {branch} but carries no kernelbot marker: kernelbot "
                "does not touch a PR it did not write (close it or restore its marker)",
                current,
            )
        reason = refresh_reason(current.marker, new)
        if reason is None:
            return Decision(
                Action.SKIP,
                f"#{current.number} already carries kernel {_short(new.kernel_hash)} on base "
                f"{_short(new.base_sha)}",
                current,
            )
        return Decision(Action.UPDATE, f"#{current.number}: {reason}", current)

    others = other_open_kernelbot_prs(branch, open_prs)
    if len(others) >= max_open:
        listed = ", ".join(f"#{pr.number} ({pr.marker.op if pr.marker else pr.head_branch})" for pr in others)
        return Decision(
            Action.REFUSE,
            f"kernelbot already has {len(others)} open PR(s) in this repository ({listed}); at most "
            f"{max_open} open at a time, so this proposal waits until one is merged or closed",
            others[0],
        )
    earlier = [pr for pr in branch_prs if pr.state is not PRState.OPEN]
    if earlier:
        return Decision(
            Action.OPEN, f"a new kernel for {new.op} (earlier PRs on {branch}: #{earlier[0].number})"
        )
    return Decision(Action.OPEN, f"no PR for {new.op} yet")
