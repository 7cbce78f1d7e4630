"""What one `kernelbot target` invocation was asked to do (the command line, parsed and checked)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evolution.search import SearchOverrides
from kernelbot.confirm.stoprule import StopRule

DEFAULT_TOKEN_ENV = "GITHUB_TOKEN"


@dataclass(frozen=True)
class TargetOptions:
    profile: str
    function: str
    repo: str | None = None  # PATH | URL | pypi:NAME==VERSION; None: the profile's (the bundled example)
    out: Path | None = None
    spec: Path | None = None
    search: SearchOverrides = field(default_factory=SearchOverrides)  # the evolve stage's flags
    benchmark_runs: int | None = None  # per side; None: the profile benchmark's runs (5 when shipped)
    confirm: StopRule = field(default_factory=StopRule)  # fresh processes per baseline column (confirm stage)
    open_pr: bool = False
    fork: str | None = None  # the fork's remote URL (or a remote name of the repository)
    token_env: str = DEFAULT_TOKEN_ENV  # the environment variable holding the forge token
    github_api: str | None = None  # the forge's API URL; None: $KERNELBOT_GITHUB_API, else the profile's
    max_open: int = 1  # kernelbot PRs that may be open in the repository at once (forge.decisions)
    resume: bool = False
    config: Path | None = None  # kernelbot.toml with user profiles
    regime: str | None = None  # the task's regime; None: extraction's default ("graph")
    regime_from: str = ""  # where `regime` comes from (a scan that measured the region), said in task.toml
