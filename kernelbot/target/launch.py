"""Starting or continuing one target run, as a library: what `kernelbot target` does between parsing its
command line and printing the result, so that `kernelbot scan` runs the same road for the regions it picks.

    state = run_target(options)      # TargetState of the finished run; KernelbotError with what to fix

A run directory that already holds a run of the same profile and function is continued at its first
unfinished stage; one holding something else is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

from kernelbot.console import console
from kernelbot.engines.model import Profile
from kernelbot.errors import ConfigError, RunStateError
from kernelbot.target import repo as target_repo
from kernelbot.target.options import TargetOptions
from kernelbot.target.runner import RunContext, run_stages
from kernelbot.target.stages import STAGE_LIST
from kernelbot.target.state import STATE_FILE, RepoRecord, TargetState
from kernelbot.target.view import StageView, make_view


def default_run_dir(profile: str, function: str) -> Path:
    """runs/<profile>-<qualname>, e.g. runs/example-SiluAndMul.forward_native (stable: a re-run continues)."""
    qualname = function.rpartition(":")[2] or function
    return Path("runs") / f"{profile}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', qualname)}"


def run_target(options: TargetOptions, *, view: StageView | None = None) -> TargetState:
    """Run (or continue) the target run `options` describe through all six stages; returns its state.
    Progress goes to `view` (default: the console's live view)."""
    from kernelbot.engines import load_profile

    profile = load_profile(options.profile, config=options.config)  # unknown: ConfigError listing the known
    check_flags(options)
    run_dir = (options.out or default_run_dir(profile.name, options.function)).resolve()
    state = open_state(run_dir, profile, options)
    profile = profile.for_tree(state.resolve(state.repo.path))  # the source root this tree uses
    view = view or make_view(console)
    base = state.repo.base_commit[:12]
    console.print(
        f"kernelbot target {profile.name} {options.function}: {run_dir} (base {base})", markup=False
    )
    try:
        run_stages(STAGE_LIST, RunContext(run_dir, state, options, profile, view))
    finally:
        view.close()
    return state


def check_flags(options: TargetOptions) -> None:
    if options.benchmark_runs is not None and options.benchmark_runs < 0:
        raise ConfigError(f"--benchmark-runs {options.benchmark_runs}: expected 0 (skip) or more")
    if options.spec is not None and not options.spec.is_file():
        raise ConfigError(f"--spec {options.spec}: no such file")
    if options.fork and not options.open_pr:
        raise ConfigError("--fork names where to push the PR's branch: it needs --open-pr")
    if options.github_api and not options.open_pr:
        raise ConfigError("--github-api names the API the PR is opened through: it needs --open-pr")
    if options.max_open < 1:
        raise ConfigError(f"--max-open {options.max_open}: expected 1 or more")
    if options.open_pr:
        from kernelbot.forge.github import read_token

        read_token(options.token_env)  # missing: one line now, not after the search


def open_state(run_dir: Path, profile: Profile, options: TargetOptions) -> TargetState:
    """The run in `run_dir`: loaded when it is a run of this profile, function and repository, else made
    (the repository prepared as kernelbot.target.repo says)."""
    if (run_dir / STATE_FILE).is_file():
        state = TargetState.load(run_dir)
        if (state.profile, state.function) != (profile.name, options.function):
            raise RunStateError(
                f"{run_dir} is a run of {state.profile} {state.function}, not of {profile.name} "
                f"{options.function}: pick another --out"
            )
        if options.repo is not None and options.repo != state.repo.source:
            raise RunStateError(
                f"{run_dir} changes {state.repo.source}, not {options.repo}: drop --repo to continue it, or "
                "pick another --out"
            )
        return state
    if options.resume:
        raise RunStateError(
            f"--resume: {run_dir} holds no target run to continue (start one without --resume)"
        )
    if run_dir.exists() and any(p.name != target_repo.UPSTREAM_DIR for p in run_dir.iterdir()):
        raise RunStateError(
            f"{run_dir} exists and holds something other than a target run: pick another --out"
        )
    prepared = target_repo.prepare(options.repo, profile.name, profile.repo_url, run_dir)
    state = TargetState(
        run_dir=run_dir, profile=profile.name, function=options.function, repo=RepoRecord("", "", "")
    )
    state.repo = RepoRecord(
        prepared.source, state.relative(prepared.path), prepared.base_commit, prepared.branch
    )
    state.save()
    return state
