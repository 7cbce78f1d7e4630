"""The values a forge hands back: pull requests (with the kernelbot marker read from their body) and the
outcome of keeping one comment per topic."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kernelbot.forge.marker import Marker, parse_marker


class PRState(str, Enum):
    OPEN = "open"
    CLOSED = "closed"  # closed without merging
    MERGED = "merged"


@dataclass(frozen=True)
class PullRequest:
    number: int
    state: PRState
    title: str
    body: str
    head_branch: str  # the branch name, without the owner
    head_sha: str
    base_branch: str
    url: str  # the page a person opens
    head_owner: str = ""

    @property
    def marker(self) -> Marker | None:
        """What kernelbot wrote into the body; None for a PR kernelbot did not write (or whose marker was
        edited out)."""
        return parse_marker(self.body)


@dataclass(frozen=True)
class CommentResult:
    id: int
    action: str  # "created" | "updated" | "unchanged"
    url: str
