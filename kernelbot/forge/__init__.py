"""kernelbot's seam to code forges: the `Forge` protocol, its GitHub implementation, the hidden PR marker
and the pure decisions on what to do with a new proposal."""

from __future__ import annotations

from kernelbot.forge.base import Forge
from kernelbot.forge.decisions import Action, Decision, decide
from kernelbot.forge.errors import ForgeAuthError, ForgeError
from kernelbot.forge.github import GitHubForge, repo_from_url
from kernelbot.forge.marker import Marker, parse_marker, with_marker
from kernelbot.forge.types import CommentResult, PRState, PullRequest

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
