"""What the forge holds for a scan, read fresh at every scan: kernelbot's PRs on a region's branch (every
state, asked for when the scan comes to that region) and the repository's open PRs. The ledger's `prs`
table is rewritten from what was read; with no forge to ask (no token and no --open-pr) the ledger's last
sync stands in, and the scan says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kernelbot.forge.base import Forge
from kernelbot.forge.marker import MARKER_SCHEMA, Marker
from kernelbot.forge.types import PRState, PullRequest
from kernelbot.scan.ledger import Ledger

BranchReader = Callable[[str], tuple[PullRequest, ...]]


@dataclass
class ForgeView:
    open_prs: tuple[PullRequest, ...]  # the repository's open PRs, any head
    live: bool  # False: the ledger's copy of an earlier sync
    read_branch: BranchReader | None = None
    by_branch: dict[str, tuple[PullRequest, ...]] = field(default_factory=dict)

    def on_branch(self, branch: str) -> tuple[PullRequest, ...]:
        """kernelbot's PRs whose head is `branch` (every state), newest first."""
        if branch not in self.by_branch:
            self.by_branch[branch] = self.read_branch(branch) if self.read_branch else ()
        return self.by_branch[branch]

    def open_kernelbot(self) -> list[PullRequest]:
        """Open PRs carrying a kernelbot marker, oldest first."""
        return sorted((pr for pr in self.open_prs if pr.marker is not None), key=lambda pr: pr.number)

    def kernelbot_prs(self) -> list[PullRequest]:
        seen: dict[int, PullRequest] = {}
        for pr in (*self.open_prs, *(p for prs in self.by_branch.values() for p in prs)):
            if pr.marker is not None:
                seen[pr.number] = pr
        return [seen[n] for n in sorted(seen)]


def read_forge(forge: Forge) -> ForgeView:
    """The open PRs now; each branch's PRs when first asked for."""
    view = ForgeView(tuple(forge.find_prs(None, state="open")), live=True)
    view.read_branch = lambda branch: tuple(forge.find_prs(branch, state="all"))
    for pr in view.open_kernelbot():  # an open kernelbot PR is synced even when its region is not ranked
        view.on_branch(pr.head_branch)
    return view


def sync_ledger(ledger: Ledger, view: ForgeView) -> None:
    """The ledger's PRs of every branch read replaced by what the forge said."""
    if view.live:
        ledger.sync_prs(view.by_branch, view.kernelbot_prs())


def ledger_view(ledger: Ledger) -> ForgeView:
    """The PRs as the ledger last synced them (kernelbot's only), for a scan that cannot ask the forge."""
    by_branch: dict[str, list[PullRequest]] = {}
    open_prs = []
    for row in ledger.prs():
        marker = Marker(
            row["op"], row["kernel_hash"], row["base_sha"], "", MARKER_SCHEMA, row["pushed_commit"]
        )
        pr = PullRequest(
            number=row["number"],
            state=PRState(row["state"]),
            title="",
            body=marker.render(),
            head_branch=row["branch"],
            head_sha=row["head_sha"],
            base_branch="",
            url=row["url"],
        )
        by_branch.setdefault(pr.head_branch, []).append(pr)
        if pr.state is PRState.OPEN:
            open_prs.append(pr)
    ordered = {b: tuple(sorted(prs, key=lambda p: -p.number)) for b, prs in by_branch.items()}
    return ForgeView(tuple(open_prs), live=False, by_branch=ordered)
