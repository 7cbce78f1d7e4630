"""`kernelbot evolve TASK`: search for fast correct Triton candidates; every step lands in RUN/run.sqlite.

A fresh run refuses a directory that already holds one; `--resume` continues it (pending children are judged,
nothing judged is judged again, the iteration limit counts the whole run). At the end the winner is written
to RUN/best.py, the growth curve to RUN/growth.{csv,json} and a summary to RUN/summary.json (also printed
with --json: best per-case speedups in both regimes). The search itself is evolution.search.run_search.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from kernelbot.cli.application import command
from kernelbot.cli.search_options import Backend, FusionSeed, InductorSeed, LlmEndpoints, WorkersPerDevice
from kernelbot.console import console, err_console

if TYPE_CHECKING:
    from evolution.search import SearchOverrides
    from evolution.summary import SearchSummary, TokenSpend


@command("evolve")
def evolve_command(
    task: Annotated[Path, typer.Argument(help="Task directory (task.toml, reference.py, inputs.py).")],
    iterations: Annotated[
        Optional[int], typer.Option(help="Mutation attempts for the whole run (default 50).")  # noqa: UP045
    ] = None,
    llm: LlmEndpoints = None,
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
    backend: Backend = None,
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
    workers_per_device: WorkersPerDevice = None,
    inductor_seed: InductorSeed = None,
    fusion_seed: FusionSeed = None,
    rng_seed: Annotated[
        Optional[int], typer.Option("--rng-seed", help="Seed of the search's random choices.")  # noqa: UP045
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summary (best per-case speedups, growth) as JSON.")
    ] = False,
) -> int:
    """Evolve fast, correct Triton candidates for TASK; progress and results go to the run directory."""
    from evolution.search import SearchOverrides

    overrides = SearchOverrides(
        iterations=iterations,
        time_limit=time_limit,
        llm=tuple(llm or ()),
        api_key_env=api_key_env,
        workers=workers,
        backend=backend,
        devices=devices,
        workers_per_device=workers_per_device,
        seed_files=tuple(seed or ()),
        inductor_seed=inductor_seed,
        fusion_seed=fusion_seed,
        seed=rng_seed,
    )
    return run(task, out=out, resume=resume, config_file=config, as_json=as_json, overrides=overrides)


def run(
    task_path: Path,
    *,
    out: Path | None,
    resume: bool,
    config_file: Path | None,
    as_json: bool,
    overrides: SearchOverrides,
) -> int:
    from evolution.progress import make_progress
    from evolution.search import run_search

    # With --json, stdout carries only the summary: progress goes to stderr.
    progress = make_progress(err_console if as_json else console)
    summary = run_search(task_path, out, overrides, resume=resume, config_file=config_file, progress=progress)
    _report(summary, as_json)
    return 0


def _report(summary: SearchSummary, as_json: bool) -> None:
    if as_json:
        console.print(json.dumps(summary.to_dict(), indent=2, default=str), markup=False, highlight=False)
        return
    best = summary.best
    console.print(f"stopped: {summary.stop_reason}")
    console.print(f"evaluations: {summary.evaluations}  outcomes: {summary.outcomes}")
    if best is None:
        console.print("no correct candidate was found")
    else:
        speedup = f", speedup {best.speedup:.3f}x" if best.speedup else ""
        console.print(f"best: {best.program_id} ({best.operator}) score {best.score:.3f}{speedup}")
        console.print(f"winner written to {best.candidate_file}")
    for line in usage_lines(summary.tokens):
        console.print(line, markup=False, highlight=False)
    console.print(f"growth curve: {summary.growth_csv}")


def usage_lines(tokens: TokenSpend) -> list[str]:
    """What the LLM endpoints cost: one line per model, and the total when there are several."""
    from evolution.stopping import format_usd

    lines = [
        f"LLM {model}: {u.requests} answer(s), {u.prompt} prompt + {u.completion} completion "
        f"tokens, {format_usd(u.cost_usd)}"
        for model, u in tokens.by_model.items()
    ]
    if len(tokens.by_model) > 1:
        total = tokens.prompt + tokens.completion
        lines.append(f"LLM total: {total} tokens, {format_usd(tokens.cost_usd)}")
    return lines
