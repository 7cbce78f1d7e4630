"""`kernelbot target PROFILE --function F`: from a function in a repository to a proposal a maintainer can
trust, in six recorded stages (kernelbot.target.stages) under one run directory.

A run directory that already holds a run of the same profile and function is continued at its first
unfinished stage (with or without --resume; --resume only insists that there is one), so a killed run loses
nothing and a finished search is never redone. The road itself is kernelbot.target.launch.run_target.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from kernelbot.cli.application import command
from kernelbot.cli.search_options import (
    Backend,
    ConfirmProcesses,
    FusionSeed,
    InductorSeed,
    LlmEndpoints,
    WorkersPerDevice,
    confirm_rule,
)
from kernelbot.console import console

if TYPE_CHECKING:
    from kernelbot.target.options import TargetOptions
    from kernelbot.target.state import TargetState


@command("target")
def target_command(
    profile: Annotated[
        str, typer.Argument(help="Target profile: example | sglang | lmdeploy | one in kernelbot.toml.")
    ],
    function: Annotated[
        str, typer.Option(help="package.module:Qualname (or path/to/file.py:Qualname) of the function.")
    ],
    repo: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="PATH (a clean checkout on a branch) | URL (cloned) | pypi:NAME==VERSION (a release)."
        ),
    ] = None,
    out: Annotated[
        Optional[Path], typer.Option(help="Run directory (default runs/<profile>-<qualname>).")  # noqa: UP045
    ] = None,
    spec: Annotated[
        Optional[Path], typer.Option(help="TOML input spec (shipped for the example's functions).")  # noqa: UP045
    ] = None,
    llm: LlmEndpoints = None,
    api_key_env: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Environment variable holding the --llm key (default KERNELBOT_LLM_API_KEY)."),
    ] = None,
    iterations: Annotated[
        Optional[int], typer.Option(help="Mutation attempts of the search (default 50).")  # noqa: UP045
    ] = None,
    time_limit: Annotated[
        Optional[str], typer.Option(help="Wall time of the search: 600, 90s, 30m, 2h.")  # noqa: UP045
    ] = None,
    backend: Backend = None,
    workers_per_device: WorkersPerDevice = None,
    seed: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option("--seed", help="A candidate file the search starts from; repeatable."),
    ] = None,
    inductor_seed: InductorSeed = None,
    fusion_seed: FusionSeed = None,
    benchmark_runs: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            help="End-to-end benchmark runs per side, alternating base and change (0: skip; default 5)."
        ),
    ] = None,
    confirm_processes: ConfirmProcesses = None,
    open_pr: Annotated[
        bool, typer.Option("--open-pr", help="Push the branch to --fork and open or update the PR.")
    ] = False,
    fork: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Your fork's git URL (or a remote name of the repository) to push the branch to."),
    ] = None,
    token_env: Annotated[
        str, typer.Option(help="Environment variable holding the GitHub token (for --open-pr).")
    ] = "GITHUB_TOKEN",
    github_api: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="GitHub API URL for --open-pr (default $KERNELBOT_GITHUB_API, else the profile's api_url)."
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run in --out (it must exist).")
    ] = False,
    config: Annotated[
        Optional[Path], typer.Option(help="kernelbot.toml with user profiles.")  # noqa: UP045
    ] = None,
) -> int:
    """Extract FUNCTION, evolve a kernel, put it into the repo, verify it there, and propose it.

    Stages extract -> evolve -> integrate -> verify -> propose, recorded in RUN/target.toml; a re-run
    continues at the first unfinished one. Without --open-pr the proposal is a bundle in RUN/pr/.
    """
    from evolution.search import SearchOverrides
    from kernelbot.target.options import TargetOptions

    search = SearchOverrides(
        iterations=iterations,
        time_limit=time_limit,
        llm=tuple(llm or ()),
        api_key_env=api_key_env,
        backend=backend,
        workers_per_device=workers_per_device,
        seed_files=tuple(seed or ()),
        inductor_seed=inductor_seed,
        fusion_seed=fusion_seed,
    )
    options = TargetOptions(
        profile=profile,
        function=function,
        repo=repo,
        out=out,
        spec=spec,
        search=search,
        benchmark_runs=benchmark_runs,
        confirm=confirm_rule(confirm_processes),
        open_pr=open_pr,
        fork=fork,
        token_env=token_env,
        github_api=github_api,
        resume=resume,
        config=config,
    )
    return run(options)


def run(options: TargetOptions) -> int:
    from kernelbot.target.launch import run_target

    _report(run_target(options))
    return 0


def _report(state: TargetState) -> None:
    from kernelbot.target.records import ProposeRecord

    propose = state.record(ProposeRecord)
    console.print(f"bundle: {state.resolve(propose.bundle)}", markup=False)
    pr = propose.pr
    if pr:
        console.print(f"pull request: {pr.action} {pr.url or ''}".rstrip(), markup=False)
