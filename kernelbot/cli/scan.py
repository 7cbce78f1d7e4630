"""`kernelbot scan --repo R [--profile-cmd CMD] [--top N] [--json]`: rank functions worth a fused kernel.

R is a directory or `pypi:NAME==VERSION` (a release unpacked into the source cache, as `extract` takes it).
Function names are printed whole, each row's name last on its line and never wrapped, so that one can be
copied into `kernelbot extract --function`; files the parser could not read are named, not skipped quietly.

With `--profile P` it is the periodic bot instead (`run_periodic`, kernelbot.scan): rank, skip what is
proposed, merged or refused, and run `kernelbot target` on the best remaining region.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from kernelbot.cli.application import command
from kernelbot.cli.search_options import (
    Backend,
    ConfirmProcesses,
    FusionSeed,
    InductorSeed,
    WorkersPerDevice,
    confirm_rule,
)
from kernelbot.console import console, warn

if TYPE_CHECKING:
    from extractors.scan_profile import ProfiledFunction
    from extractors.scan_static import StaticScan
    from kernelbot.scan import ScanOptions

UNPARSED_SHOWN = 20  # files named one per line; the count covers the rest


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
    confirm_processes: ConfirmProcesses = None,
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
    from kernelbot.errors import ConfigError

    if profile is None:
        if repo is None:
            raise ConfigError("kernelbot scan needs --repo DIR (a repository to rank) or --profile P")
        return run(repo, profile_cmd=profile_cmd, top=top, as_json=as_json, timeout=timeout)
    from evolution.search import SearchOverrides
    from kernelbot.scan import ScanOptions

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
        search=SearchOverrides(
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
        confirm=confirm_rule(confirm_processes),
        profile_timeout=timeout,
        config=config,
    )
    return run_periodic(options)


def run(
    repo: Path | str,
    *,
    profile_cmd: str | None = None,
    top: int = 20,
    as_json: bool = False,
    timeout: float = 1800.0,
) -> int:
    from extractors.errors import ExtractionError
    from extractors.extract import resolve_repo
    from extractors.scan_profile import profile_command
    from extractors.scan_static import scan_static

    if top < 1:
        raise ExtractionError("--top must be at least 1")
    given = str(repo)
    root = resolve_repo(repo)
    if not root.is_dir():
        raise ExtractionError(f"--repo {given} is not a directory")
    scan = scan_static(root, top)
    _check_readable(given, scan)
    dynamic, cuda = profile_command(root, profile_cmd, top, timeout) if profile_cmd else ([], False)
    if as_json:
        payload: dict[str, object] = {
            "repo": str(root.resolve()),
            "static": [h.to_dict() for h in scan.hotspots],
            "files": scan.files,
            "unparsed": [{"path": u.path, "reason": u.reason} for u in scan.unparsed],
        }
        if profile_cmd:
            payload["dynamic"] = {
                "command": profile_cmd,
                "measure": "gpu" if cuda else "cpu",
                "functions": [p.to_dict() for p in dynamic],
            }
        console.print_json(json.dumps(payload))
        return 0
    _print_static(given, scan)
    if profile_cmd:
        _print_profile(profile_cmd, dynamic, cuda)
    _print_unparsed(scan)
    best = (dynamic[0].target if dynamic else "") or (scan.hotspots[0].target if scan.hotspots else "")
    if best:
        _line(f"next: kernelbot extract --repo {given} --function {best}")
    return 0


def _check_readable(given: str, scan: StaticScan) -> None:
    from extractors.errors import ExtractionError

    if not scan.files:
        raise ExtractionError(
            f"--repo {given} holds no Python file to rank (tests, benchmarks, examples and docs are not read)"
        )
    if len(scan.unparsed) == scan.files:
        first = scan.unparsed[0]
        raise ExtractionError(
            f"--repo {given}: none of its {scan.files} Python file(s) could be parsed "
            f"(e.g. {first.path}: {first.reason}); is it Python 3 source?"
        )


def _print_static(given: str, scan: StaticScan) -> None:
    read = f"{scan.files} file(s) read" + (f", {len(scan.unparsed)} not parsed" if scan.unparsed else "")
    _line(f"static ranking of {given} ({read})")
    if not scan.hotspots:
        _line("  no function holds three or more PyTorch ops: nothing here to fuse")
        return
    _line(f"{'#':>4}  {'score':>7}  function")
    for rank, hot in enumerate(scan.hotspots, 1):
        _line(f"{rank:>4}  {hot.score:>7.1f}  {hot.target}")
        _line(f"{'':>15}{hot.evidence}")


def _print_profile(command: str, rows: list[ProfiledFunction], cuda: bool) -> None:
    measure = "GPU" if cuda else "CPU (no CUDA here)"
    _line("")
    _line(f"profiled: {command} - {measure} time by function")
    regime = f"{'runs in':>8}  " if cuda else ""
    header = f"{'#':>4}  {'time ms':>9}  {'share':>6}  {'ops':>6}  {'kernels':>7}  {'host ms':>9}  {regime}"
    _line(header + "function")
    for rank, row in enumerate(rows, 1):
        # On a GPU: "graph" when most of the region's GPU time is replayed from CUDA graphs, else "eager".
        runs_in = f"{'graph' if row.regime == 'graph' else 'eager':>8}  " if cuda else ""
        _line(
            f"{rank:>4}  {row.time_us / 1000:>9.2f}  {row.share:>6.1%}  {row.ops:>6}  {row.kernels:>7}  "
            f"{row.host_us / 1000:>9.2f}  {runs_in}{row.target}"
        )


def _print_unparsed(scan: StaticScan) -> None:
    if not scan.unparsed:
        return
    warn(f"{len(scan.unparsed)} file(s) could not be parsed, so their functions are not ranked:")
    for item in scan.unparsed[:UNPARSED_SHOWN]:
        warn(escape(f"  {item.path}: {item.reason}"))
    if len(scan.unparsed) > UNPARSED_SHOWN:
        warn(f"  and {len(scan.unparsed) - UNPARSED_SHOWN} more (--json lists them all)")


def _line(text: str) -> None:
    # Never wrapped (the console soft-wraps): a qualified name stays one piece to copy.
    console.print(text, markup=False, highlight=False)


def run_periodic(options: ScanOptions) -> int:
    """`kernelbot scan --profile P ...`: one scan of the bot (kernelbot.scan); prints what it did and why."""
    from kernelbot.scan import run_scan

    outcome = run_scan(options)
    for line in outcome.lines():
        console.print(line, markup=False, highlight=False)
    return 0
