"""`scan` ranks a repository's functions as kernel targets (or, with --profile, scans as the bot), and
`init-workflow` writes the GitHub Actions workflow that runs such scans on a schedule."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelbot.cli.application import command
from kernelbot.cli.search_options import Backend, FusionSeed, InductorSeed, WorkersPerDevice


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
    backend: Backend = None,
    workers_per_device: WorkersPerDevice = None,
    seed: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option(
            "--seed", help="A candidate file; the search of the region whose entry it defines starts from it."
        ),
    ] = None,
    inductor_seed: InductorSeed = None,
    fusion_seed: FusionSeed = None,
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
