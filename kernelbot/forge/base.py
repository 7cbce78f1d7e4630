"""The one seam between kernelbot and a code forge. Everything that reads or writes pull requests goes
through these verbs (git pushes go through kernelbot.git); each is small and idempotent in intent, so a
re-run asks the forge what is there instead of trusting what it did last time."""

from __future__ import annotations

from typing import Protocol

from kernelbot.forge.types import CommentResult, PRState, PullRequest


class Forge(Protocol):
    @property
    def repo(self) -> str:
        """The upstream repository PRs are opened against, "owner/name"."""
        ...

    def find_prs(self, head_branch: str | None = None, *, state: str = "all") -> list[PullRequest]:
        """PRs whose head is `head_branch` in the contributor's fork (every head when None), in `state`
        "open", "closed" or "all"; newest first."""
        ...

    def create_pr(
        self, *, head_branch: str, base_branch: str, title: str, body: str, draft: bool = False
    ) -> PullRequest:
        """Open a PR; when the forge says one is already open for this head, that PR is returned."""
        ...

    def update_pr(
        self, number: int, *, title: str | None = None, body: str | None = None, state: PRState | None = None
    ) -> PullRequest: ...

    def close_pr(self, number: int) -> PullRequest: ...

    def ensure_comment(self, number: int, topic: str, body: str) -> CommentResult:
        """Keep exactly one comment per topic on the PR: created once, then edited in place."""
        ...

    def massage_markdown(self, body: str) -> str:
        """The body as this forge wants it (its size limit, its line endings)."""
        ...
