"""What one `kernelbot target` invocation was asked to do (the command line, parsed and checked)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evolution.config import strip_llm_flag_credentials
from kernelbot.confirm.stoprule import StopRule

DEFAULT_TOKEN_ENV = "GITHUB_TOKEN"


@dataclass(frozen=True)
class SearchFlags:
    """The evolve stage's flags, as `kernelbot evolve` takes them (None: the search config's default)."""

    iterations: int | None = None
    time_limit: str | None = None
    llm: tuple[str, ...] = ()
    api_key_env: str | None = None
    backend: str | None = None
    workers_per_device: int | None = None
    seed_files: tuple[Path, ...] = ()
    inductor_seed: bool | None = None
    fusion_seed: bool | None = None

    def __post_init__(self) -> None:
        # Recorded in target.toml: a URL's `user:password@` goes to the secrets registry instead.
        object.__setattr__(self, "llm", tuple(strip_llm_flag_credentials(spec) for spec in self.llm))

    def as_evolve_flags(self) -> dict[str, object]:
        return {
            "iterations": self.iterations,
            "time_limit": self.time_limit,
            "llm": list(self.llm) or None,
            "api_key_env": self.api_key_env,
            "workers": None,
            "backend": self.backend,
            "devices": None,
            "workers_per_device": self.workers_per_device,
            "seed_files": list(self.seed_files) or None,
            "inductor_seed": self.inductor_seed,
            "fusion_seed": self.fusion_seed,
            "seed": None,
        }


@dataclass(frozen=True)
class TargetOptions:
    profile: str
    function: str
    repo: str | None = None  # PATH | URL | pypi:NAME==VERSION; None: the profile's (the bundled example)
    out: Path | None = None
    spec: Path | None = None
    search: SearchFlags = field(default_factory=SearchFlags)
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
