"""What one `kernelbot scan --profile P` was asked to do (the command line, parsed)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from evolution.search import SearchOverrides
from kernelbot.confirm.stoprule import StopRule
from kernelbot.forge.decisions import DEFAULT_MAX_OPEN
from kernelbot.target.options import DEFAULT_TOKEN_ENV


@dataclass(frozen=True)
class ScanOptions:
    profile: str
    repo: str | None = None  # PATH | URL | pypi:NAME==VERSION; None: the profile's (the bundled example)
    state_dir: Path | None = None  # None: default_state_dir(profile)
    open_pr: bool = False
    fork: str | None = None
    token_env: str = DEFAULT_TOKEN_ENV
    max_new_prs: int = 1  # new proposals (PRs, or bundles without --open-pr) one scan makes
    max_open: int = DEFAULT_MAX_OPEN  # kernelbot PRs open in the repository at once
    max_attempts: int = 3  # target runs one scan starts for new regions, failures included
    max_refreshes: int = 1  # target runs one scan starts to refresh open PRs
    only: tuple[str, ...] = ()  # fnmatch patterns over module:Qualname; empty: every region
    exclude: tuple[str, ...] = ()
    top: int = 10  # regions listed in the report (all are considered)
    search: SearchOverrides = field(default_factory=SearchOverrides)  # seed files go to the regions they fit
    benchmark_runs: int | None = None
    confirm: StopRule = field(default_factory=StopRule)  # each target run's confirmation
    profile_timeout: float = 1800.0  # seconds the profiled benchmark may run
    config: Path | None = None  # kernelbot.toml with user profiles


def kernelbot_home() -> Path:
    return Path(os.environ.get("KERNELBOT_HOME") or Path.home() / ".kernelbot")


def default_state_dir(repo_url: str, profile: str) -> Path:
    """$KERNELBOT_HOME/scans/<owner>-<name> of the repository PRs go to (the profile's name without one)."""
    from kernelbot.errors import ConfigError
    from kernelbot.forge.github import repo_from_url

    try:
        key = repo_from_url(repo_url).replace("/", "-")
    except ConfigError:  # a profile without a GitHub URL: its own name
        key = profile
    return kernelbot_home() / "scans" / key
