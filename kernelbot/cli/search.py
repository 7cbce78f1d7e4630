"""The search commands: `eval` judges one candidate, `evolve` searches for better ones, `best` and `export`
read what a search left in its run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelbot.cli.application import BACKEND_HELP, command
from kernelbot.cli.search_options import Backend, FusionSeed, InductorSeed, LlmEndpoints, WorkersPerDevice


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
