"""Command-line entry: parses arguments and dispatches to `kernelbot.commands.<verb>.run`. Nothing else.

Every command returns an exit code (kernelbot.exit_codes). A KernelbotError becomes one line on stderr and
exit 1; any other exception is our bug: its traceback goes to a crash file whose path is printed (exit 3).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional, TypeVar

import typer

from kernelbot import exit_codes
from kernelbot.console import error
from kernelbot.crash import report_crash
from kernelbot.errors import KernelbotError

app = typer.Typer(
    name="kernelbot",
    help="Evolve fused Triton kernels for hot PyTorch code and prove they are faster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., int])


def command(name: str) -> Callable[[F], F]:
    """Register a command whose return value is its exit code, behind the one error boundary."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(*args: object, **kwargs: object) -> None:
            try:
                code = fn(*args, **kwargs)
            except (typer.Exit, typer.Abort):
                raise
            except KeyboardInterrupt:
                error("interrupted")
                raise typer.Exit(exit_codes.INTERRUPTED) from None
            except KernelbotError as exc:
                error(str(exc))
                raise typer.Exit(exit_codes.USER_ERROR) from None
            except Exception:
                path = report_crash(sys.argv)
                error(f"an unexpected error occurred (a kernelbot bug); details written to {path}")
                raise typer.Exit(exit_codes.CRASH) from None
            raise typer.Exit(code or exit_codes.OK)

        app.command(name)(guarded)
        return fn

    return decorate


@app.callback(invoke_without_command=True)
def root(
    version: Annotated[bool, typer.Option("--version", help="Print kernelbot's version and exit.")] = False,
) -> None:
    """Evolve fused Triton kernels for hot PyTorch code and prove they are faster."""
    if version:
        from kernelbot import __version__

        typer.echo(f"kernelbot {__version__}")
        raise typer.Exit(exit_codes.OK)


BACKEND_HELP = "auto | triton-cuda | triton-interpret (CPU, correctness only) | maca"


@command("eval")
def eval_command(
    task: Annotated[Path, typer.Argument(help="Task directory (task.toml, reference.py, inputs.py).")],
    candidate: Annotated[Path, typer.Argument(help="Candidate .py file defining the task's entry.")],
    backend: Annotated[str, typer.Option(help=BACKEND_HELP)] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the full EvalResult as JSON.")] = False,
    seeds: Annotated[int, typer.Option(help="Hidden random seeds per case.")] = 3,
    device: Annotated[int, typer.Option(help="GPU index for triton-cuda / maca.")] = 0,
    no_static: Annotated[bool, typer.Option("--no-static", help="Skip the static checks.")] = False,
) -> int:
    """Judge CANDIDATE against TASK: static checks, compile, correctness, hack checks, timing.

    Exit codes: 0 passed, 4 rejected (a stage failed), 5 flagged by a hack check, 1 bad input.
    """
    from kernelbot.commands import eval as eval_cmd

    return eval_cmd.run(
        task, candidate, backend=backend, as_json=as_json, seeds=seeds, device=device, static=not no_static
    )


@command("evolve")
def evolve_command(
    task: Annotated[Path, typer.Argument(help="Task directory (task.toml, reference.py, inputs.py).")],
    iterations: Annotated[
        Optional[int], typer.Option(help="Mutation attempts for the whole run (default 50).")  # noqa: UP045
    ] = None,
    llm: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--llm",
            help="MODEL@URL of an OpenAI-compatible endpoint (MODEL@URL#WEIGHT to weight it); repeatable.",
        ),
    ] = None,
    api_key_env: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="Environment variable holding the --llm endpoints' key (default KERNELBOT_LLM_API_KEY)."
        ),
    ] = None,
    workers: Annotated[
        Optional[str], typer.Option(help="local | ray | ray://host:port (default local).")  # noqa: UP045
    ] = None,
    out: Annotated[
        Optional[Path], typer.Option(help="Run directory (default runs/<task>-<time>).")  # noqa: UP045
    ] = None,
    backend: Annotated[Optional[str], typer.Option(help=BACKEND_HELP)] = None,  # noqa: UP045
    time_limit: Annotated[
        Optional[str], typer.Option(help="Wall time of this invocation: 600, 90s, 30m, 2h.")  # noqa: UP045
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out.")] = False,
    config: Annotated[
        Optional[Path], typer.Option(help="Search config TOML (archive, sampling, stop, ...).")  # noqa: UP045
    ] = None,
    seed: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option(
            "--seed", help="Extra seed candidate file; repeatable (the task's candidates/ are used too)."
        ),
    ] = None,
    devices: Annotated[
        Optional[str], typer.Option(help="Local GPUs to evaluate on, e.g. 0,1 (default: all).")  # noqa: UP045
    ] = None,
    workers_per_device: Annotated[
        Optional[int], typer.Option(help="Warm evaluation workers per GPU.")  # noqa: UP045
    ] = None,
    inductor_seed: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option("--inductor-seed/--no-inductor-seed", help="Seed from torch.compile's Triton code."),
    ] = None,
    fusion_seed: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option("--fusion-seed/--no-fusion-seed", help="Seed from the fusion generator's kernel."),
    ] = None,
    rng_seed: Annotated[
        Optional[int], typer.Option("--rng-seed", help="Seed of the search's random choices.")  # noqa: UP045
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summary (best per-case speedups, growth) as JSON.")
    ] = False,
) -> int:
    """Evolve fast, correct Triton candidates for TASK; progress and results go to the run directory."""
    from kernelbot.commands import evolve as evolve_cmd

    return evolve_cmd.run(
        task,
        out=out,
        resume=resume,
        config_file=config,
        as_json=as_json,
        iterations=iterations,
        time_limit=time_limit,
        llm=llm,
        api_key_env=api_key_env,
        workers=workers,
        backend=backend,
        devices=devices,
        workers_per_device=workers_per_device,
        seed_files=seed,
        inductor_seed=inductor_seed,
        fusion_seed=fusion_seed,
        seed=rng_seed,
    )


@command("best")
def best_command(
    run: Annotated[Path, typer.Argument(help="Run directory of `kernelbot evolve`.")],
    out: Annotated[
        Optional[Path], typer.Option(help="Write the winning candidate here instead of printing it.")  # noqa: UP045
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the winner's summary as JSON.")] = False,
) -> int:
    """Print (or write) the best candidate of RUN with its EvalResult summary. Exit 4 when none is correct."""
    from kernelbot.commands import best as best_cmd

    return best_cmd.run(run, out=out, as_json=as_json)


@command("export")
def export_command(
    run: Annotated[Path, typer.Argument(help="Run directory of `kernelbot evolve`.")],
    fmt: Annotated[str, typer.Option("--format", help="sft | grpo")] = "sft",
    out: Annotated[Optional[Path], typer.Option(help="JSONL file (default: stdout).")] = None,  # noqa: UP045
) -> int:
    """Export RUN's trajectories as JSONL training data (Kernel-Smith recipe); secrets never appear."""
    from kernelbot.commands import export as export_cmd

    return export_cmd.run(run, fmt=fmt, out=out)


@command("extract")
def extract_command(
    repo: Annotated[Path, typer.Option(help="Repository (a git checkout or an unpacked release).")],
    function: Annotated[
        str, typer.Option(help="package.module:Qualname, path/to/file.py:Qualname, or a unique Qualname.")
    ],
    out: Annotated[
        Optional[Path], typer.Option(help="Task directory to write (default tasks/<name>).")  # noqa: UP045
    ] = None,
    spec: Annotated[Optional[Path], typer.Option(help="TOML input spec with symbolic sizes.")] = None,  # noqa: UP045
    regime: Annotated[str, typer.Option(help="graph (CUDA graph) | wall (eager).")] = "graph",
    name: Annotated[Optional[str], typer.Option(help="Task name (default: the entry name).")] = None,  # noqa: UP045
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing task at --out.")] = False,
    no_probe: Annotated[bool, typer.Option("--no-probe", help="Skip the test run.")] = False,
) -> int:
    """Extract FUNCTION from REPO into a self-contained Task (reference.py, inputs.py, task.toml)."""
    from kernelbot.commands import extract as extract_cmd

    return extract_cmd.run(
        repo, function, out=out, spec=spec, regime=regime, name=name, force=force, probe=not no_probe
    )


@command("capture")
def capture_command(
    repo: Annotated[Path, typer.Option(help="Repository holding the function.")],
    function: Annotated[str, typer.Option(help="package.module:Qualname or path/to/file.py:Qualname.")],
    cmd: Annotated[Optional[list[str]], typer.Argument(help="Command to run, after `--`.")] = None,  # noqa: UP045
    max_calls: Annotated[int, typer.Option(help="Distinct call signatures to record.")] = 8,
    out: Annotated[Optional[Path], typer.Option(help="Task directory to write.")] = None,  # noqa: UP045
    regime: Annotated[str, typer.Option(help="graph | wall.")] = "graph",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing task at --out.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds the command may run.")] = 1800.0,
) -> int:
    """Run CMD with FUNCTION wrapped, record its first distinct calls, and write a Task that replays them."""
    from kernelbot.commands import capture as capture_cmd

    return capture_cmd.run(
        repo,
        function,
        list(cmd or []),
        max_calls=max_calls,
        out=out,
        regime=regime,
        force=force,
        timeout=timeout,
    )


@command("scan")
def scan_command(
    profile: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="Target profile: scan as the bot (rank, skip what is proposed, run `target` on the best)."
        ),
    ] = None,
    repo: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="Repository: a directory or pypi:NAME==VERSION to rank; with --profile also a URL (cloned, "
            "fetched each scan; default: the profile's)."
        ),
    ] = None,
    profile_cmd: Annotated[
        Optional[str], typer.Option(help="Command to profile (run under torch.profiler in a subprocess).")  # noqa: UP045
    ] = None,
    top: Annotated[int, typer.Option(help="Rows to show.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rankings as JSON.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds the profiled command may run.")] = 1800.0,
    open_pr: Annotated[
        bool, typer.Option("--open-pr", help="With --profile: open or update the PR (else write a bundle).")
    ] = False,
    fork: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Your fork's git URL (or a remote name of the repository) to push branches to."),
    ] = None,
    max_new_prs: Annotated[int, typer.Option(help="New proposals one scan makes.")] = 1,
    max_open: Annotated[int, typer.Option(help="kernelbot PRs open in the repository at once.")] = 1,
    max_attempts: Annotated[
        int, typer.Option(help="Target runs one scan starts for new regions, failures included.")
    ] = 3,
    max_refreshes: Annotated[int, typer.Option(help="Open PRs one scan refreshes.")] = 1,
    only: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--only", help="Consider only regions matching this module:Qualname pattern; repeatable."
        ),
    ] = None,
    exclude: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--exclude", help="Leave out regions matching this pattern; repeatable."),
    ] = None,
    state_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="Scan state: ledger, lock, clone, runs (default ~/.kernelbot/scans/OWNER-NAME)."),
    ] = None,
    llm: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--llm", help="MODEL@URL of an OpenAI-compatible endpoint for the searches; repeatable."
        ),
    ] = None,
    api_key_env: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Environment variable holding the --llm key (default KERNELBOT_LLM_API_KEY)."),
    ] = None,
    iterations: Annotated[
        Optional[int], typer.Option(help="Mutation attempts of each search (default 50).")  # noqa: UP045
    ] = None,
    time_limit: Annotated[
        Optional[str], typer.Option(help="Wall time of each search: 600, 90s, 30m, 2h.")  # noqa: UP045
    ] = None,
    backend: Annotated[Optional[str], typer.Option(help=BACKEND_HELP)] = None,  # noqa: UP045
    workers_per_device: Annotated[
        Optional[int], typer.Option(help="Warm evaluation workers per GPU.")  # noqa: UP045
    ] = None,
    seed: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option(
            "--seed", help="A candidate file; the search of the region whose entry it defines starts from it."
        ),
    ] = None,
    inductor_seed: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option("--inductor-seed/--no-inductor-seed", help="Seed from torch.compile's Triton code."),
    ] = None,
    fusion_seed: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option("--fusion-seed/--no-fusion-seed", help="Seed from the fusion generator's kernel."),
    ] = None,
    benchmark_runs: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(help="End-to-end benchmark runs per side in each target run (0: skip; default 5)."),
    ] = None,
    token_env: Annotated[
        str, typer.Option(help="Environment variable holding the GitHub token.")
    ] = "GITHUB_TOKEN",
    config: Annotated[
        Optional[Path], typer.Option(help="kernelbot.toml with user profiles.")  # noqa: UP045
    ] = None,
) -> int:
    """Rank REPO's functions as kernel targets; with --profile, scan as the bot.

    Without --profile: static evidence, and GPU/CPU time with --profile-cmd. With --profile: rank by
    measured time under the profile's benchmark (static where it cannot run), skip regions already
    proposed, merged or refused, keep open PRs current, and run `kernelbot target` on the best remaining
    one; prints what it did and why it skipped the others.
    """
    from kernelbot.commands import scan as scan_cmd
    from kernelbot.errors import ConfigError

    if profile is None:
        if repo is None:
            raise ConfigError("kernelbot scan needs --repo DIR (a repository to rank) or --profile P")
        return scan_cmd.run(repo, profile_cmd=profile_cmd, top=top, as_json=as_json, timeout=timeout)
    from kernelbot.scan import ScanOptions
    from kernelbot.target.options import SearchFlags

    if profile_cmd is not None or as_json:
        flag = "--profile-cmd" if profile_cmd is not None else "--json"
        raise ConfigError(
            f"{flag} is for the ranking without --profile: a scan profiles the profile's benchmark and "
            "writes what it did to STATE/last-scan.json"
        )
    options = ScanOptions(
        profile=profile,
        repo=repo,
        state_dir=state_dir,
        open_pr=open_pr,
        fork=fork,
        token_env=token_env,
        max_new_prs=max_new_prs,
        max_open=max_open,
        max_attempts=max_attempts,
        max_refreshes=max_refreshes,
        only=tuple(only or ()),
        exclude=tuple(exclude or ()),
        top=top,
        search=SearchFlags(
            iterations=iterations,
            time_limit=time_limit,
            llm=tuple(llm or ()),
            api_key_env=api_key_env,
            backend=backend,
            workers_per_device=workers_per_device,
            seed_files=tuple(seed or ()),
            inductor_seed=inductor_seed,
            fusion_seed=fusion_seed,
        ),
        benchmark_runs=benchmark_runs,
        profile_timeout=timeout,
        config=config,
    )
    return scan_cmd.run_periodic(options)


@command("init-workflow")
def init_workflow_command(
    profile: Annotated[str, typer.Option(help="Target profile the scheduled scans run with.")],
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="Workflow file (default .github/workflows/kernelbot-scan-PROFILE.yml)."),
    ] = None,
    cron: Annotated[
        str, typer.Option(help="When scheduled scans run (UTC, five cron fields).")
    ] = "17 3 * * *",
    runs_on: Annotated[
        str, typer.Option(help="The self-hosted runner's labels, comma-separated.")
    ] = "self-hosted,linux,x64,gpu",
    open_pr: Annotated[
        bool, typer.Option("--open-pr", help="Scheduled scans open or update PRs (else write bundles).")
    ] = False,
    fork: Annotated[
        Optional[str], typer.Option(help="The fork's git URL the scans push branches to.")  # noqa: UP045
    ] = None,
    repo: Annotated[
        Optional[str], typer.Option(help="--repo of the scans (default: the profile's).")  # noqa: UP045
    ] = None,
    max_new_prs: Annotated[int, typer.Option(help="New proposals per scheduled scan.")] = 1,
    only: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--only", help="--only pattern of the scans; repeatable."),
    ] = None,
    exclude: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--exclude", help="--exclude pattern of the scans; repeatable."),
    ] = None,
    llm: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--llm", help="MODEL@URL the searches use; repeatable (its key from --llm-secret)."),
    ] = None,
    time_limit: Annotated[
        Optional[str], typer.Option(help="Wall time of each search: 30m, 2h.")  # noqa: UP045
    ] = None,
    token_secret: Annotated[
        str, typer.Option(help="Name of the secret holding the GitHub token.")
    ] = "KERNELBOT_GITHUB_TOKEN",
    llm_secret: Annotated[
        str, typer.Option(help="Name of the secret holding the LLM key.")
    ] = "KERNELBOT_LLM_API_KEY",
    package: Annotated[str, typer.Option(help="What pip installs on the runner.")] = "kernelbot",
    timeout_minutes: Annotated[int, typer.Option(help="The job's time limit.")] = 720,
    config: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="kernelbot.toml with the profile, relative to the repository's root."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing workflow file.")] = False,
) -> int:
    """Write a GitHub Actions workflow running `kernelbot scan --profile PROFILE` on a self-hosted GPU runner.

    Scheduled and manual runs, one concurrency group, secrets by name only, and the scan's outcome, the
    HTML report and the run directory uploaded as an artifact.
    """
    from kernelbot.commands import init_workflow as init_workflow_cmd

    options = init_workflow_cmd.WorkflowOptions(
        profile=profile,
        out=out,
        cron=cron,
        runs_on=tuple(label.strip() for label in runs_on.split(",") if label.strip()),
        open_pr=open_pr,
        fork=fork,
        repo=repo,
        max_new_prs=max_new_prs,
        only=tuple(only or ()),
        exclude=tuple(exclude or ()),
        llm=tuple(llm or ()),
        time_limit=time_limit,
        token_secret=token_secret,
        llm_secret=llm_secret,
        package=package,
        timeout_minutes=timeout_minutes,
        config=config,
        force=force,
    )
    return init_workflow_cmd.run(options)


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
    llm: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--llm",
            help="MODEL@URL of an OpenAI-compatible endpoint (MODEL@URL#WEIGHT to weight it); repeatable.",
        ),
    ] = None,
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
    backend: Annotated[Optional[str], typer.Option(help=BACKEND_HELP)] = None,  # noqa: UP045
    workers_per_device: Annotated[
        Optional[int], typer.Option(help="Warm evaluation workers per GPU.")  # noqa: UP045
    ] = None,
    seed: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option("--seed", help="A candidate file the search starts from; repeatable."),
    ] = None,
    inductor_seed: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option("--inductor-seed/--no-inductor-seed", help="Seed from torch.compile's Triton code."),
    ] = None,
    fusion_seed: Annotated[
        Optional[bool],  # noqa: UP045
        typer.Option("--fusion-seed/--no-fusion-seed", help="Seed from the fusion generator's kernel."),
    ] = None,
    benchmark_runs: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            help="End-to-end benchmark runs per side, alternating base and change (0: skip; default 5)."
        ),
    ] = None,
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
    from kernelbot.commands import target as target_cmd
    from kernelbot.target.options import SearchFlags, TargetOptions

    search = SearchFlags(
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
        open_pr=open_pr,
        fork=fork,
        token_env=token_env,
        github_api=github_api,
        resume=resume,
        config=config,
    )
    return target_cmd.run(options)


@command("report")
def report_command(
    run: Annotated[Path, typer.Argument(help="Run directory of `kernelbot evolve` or `kernelbot target`.")],
    out: Annotated[
        Optional[Path], typer.Option(help="HTML file to write (default RUN/report.html).")  # noqa: UP045
    ] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the report in a web browser.")] = False,
) -> int:
    """Write RUN's report: one self-contained HTML page (plots, the winner's speedups, lineage and code)."""
    from kernelbot.commands import report as report_cmd

    return report_cmd.run(run, out=out, open_browser=open_browser)


def main(argv: Optional[list[str]] = None) -> int:  # noqa: UP045 - typer needs Optional on 3.10
    """Run the CLI and return its exit code (the console script exits with it)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        app(args=args, prog_name="kernelbot")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
