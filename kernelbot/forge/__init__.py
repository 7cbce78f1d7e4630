"""kernelbot's seam to code forges: the `Forge` protocol, its GitHub implementation, the hidden PR marker
and the pure decisions on what to do with a new proposal.

The GitHub implementation (PyGithub) is imported when it is first asked for: writing a bundle reads the
marker and the decisions only, and needs no GitHub client installed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelbot.forge.base import Forge
from kernelbot.forge.decisions import Action, Decision, decide
from kernelbot.forge.errors import ForgeAuthError, ForgeError
from kernelbot.forge.marker import Marker, parse_marker, with_marker
from kernelbot.forge.types import CommentResult, PRState, PullRequest

if TYPE_CHECKING:
    from kernelbot.forge.github import GitHubForge, repo_from_url

_GITHUB_NAMES = ("GitHubForge", "repo_from_url")


def __getattr__(name: str) -> Any:
    if name in _GITHUB_NAMES:
        from kernelbot.forge import github

        return getattr(github, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Action",
    "CommentResult",
    "Decision",
    "Forge",
    "ForgeAuthError",
    "ForgeError",
    "GitHubForge",
    "Marker",
    "PRState",
    "PullRequest",
    "decide",
    "parse_marker",
    "repo_from_url",
    "with_marker",
]
