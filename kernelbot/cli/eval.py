"""`kernelbot eval TASK CANDIDATE`: judge one candidate and print the verdict.

Exit codes: 0 passed, 4 rejected (a stage failed), 5 flagged by a hack check or quarantined, 1 bad input
(a fault of the task itself, found before or while judging, is bad input: one line naming it, and the
candidate is not blamed).
With --json, stdout carries the EvalResult as JSON and nothing else. Otherwise the summary also names the
host preparation the candidate's source makes (contiguous copies, casts: allowed, and timed with its
kernels), so that a wrapper around a shipped kernel says what it does besides launching.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evaluators.api import evaluate_candidate
from evaluators.candidate import load_candidate
from evaluators.config import EvalConfig
from evaluators.result import HACK_CLASSES, CaseResult, EvalResult, RegimeTiming, TimingStats
from evaluators.task import Task, load_task
from kernelbot import exit_codes
from kernelbot.cli.application import BACKEND_HELP, command
from kernelbot.console import console, err_console
from kernelbot.errors import ConfigError

LOG_LINES_SHOWN = 15
PIPE_WIDTH = 140


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
    return run(
        task, candidate, backend=backend, as_json=as_json, seeds=seeds, device=device, static=not no_static
    )


def run(
    task: Path, candidate: Path, *, backend: str, as_json: bool, seeds: int, device: int, static: bool
) -> int:
    from evaluators.static.checks import host_preparation  # imports torch: not at the CLI's start

    if seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {seeds}")
    loaded = _load_task(task)  # TaskError: bad path or malformed task.toml
    cand = load_candidate(candidate, loaded.entry)  # CandidateError: missing, unparsable, no entry
    config = EvalConfig(backend=backend, device_index=device, seeds_per_case=seeds, static_checks=static)
    if as_json or not err_console.is_terminal:
        result = evaluate_candidate(loaded, cand, config)
    else:
        with err_console.status(f"judging {escape(str(candidate))} on {escape(loaded.name)} ..."):
            result = evaluate_candidate(loaded, cand, config)
    if as_json:
        console.print(result.to_json(indent=2), markup=False, highlight=False, emoji=False, soft_wrap=True)
    elif result.task_fault:
        err_console.print(f"error: {escape(result.task_fault)} (the candidate was not judged)")
    else:
        render(result, candidate, preparation=host_preparation(cand.source, loaded))
    return exit_code(result)


def _load_task(path: Path) -> Task:
    """A task directory, or a KernelBench problem file (class Model, get_inputs, get_init_inputs)."""
    if path.suffix == ".py" and path.is_file():
        from evaluators.kernelbench import load_kernelbench

        return load_kernelbench(path)
    return load_task(path)


def exit_code(result: EvalResult) -> int:
    if result.task_fault and not result.hacks:
        return exit_codes.USER_ERROR
    if result.hacks or result.quarantined:
        return exit_codes.FLAGGED
    return exit_codes.OK if result.passed else exit_codes.REJECTED


def verdict(result: EvalResult) -> str:
    if result.quarantined:
        return "[bold magenta]QUARANTINED[/]"
    if result.hacks:
        return "[bold red]FLAGGED[/]"
    if result.passed:
        return "[bold green]PASSED[/]"
    return "[bold red]REJECTED[/]"


def render(result: EvalResult, candidate: Path, preparation: list[str] | None = None) -> None:
    c = console
    c.print(
        f"{verdict(result)}  {escape(str(candidate))} on task [bold]{escape(result.task)}[/] "
        f"(backend {result.backend}, regime {result.regime}, stage reached: {result.stage.value})"
    )
    c.print(f"reason: {escape(result.reason)}" if result.reason else "reason: -")
    c.print(f"score: {result.score:.4g}   speedup: {_speedup(result)}")
    if preparation:
        c.print(f"host preparation: {escape(', '.join(preparation))} — timed with the kernel")
    # Piped output has no terminal width to respect: give the tables room rather than folding numbers.
    wide = c if c.is_terminal else Console(file=c.file, width=PIPE_WIDTH, color_system=None, highlight=False)
    if result.cases:
        wide.print(_case_table(result))
        timing = _timing_table(result)
        if timing is not None:
            wide.print(timing)
            c.print(f"[dim]* the task's regime ({result.regime}), the one that is scored[/]")
    for hack in result.hacks:
        number, description = HACK_CLASSES.get(hack.kind, (0, hack.kind))
        c.print(
            f"[red]hack #{number} {hack.kind}[/] ({description}; {hack.detector}): {escape(hack.evidence)}"
        )
    hw = result.hardware
    labelled = [("", hw.device), ("driver ", hw.driver), ("", hw.runtime), ("torch ", hw.torch)]
    labelled += [("triton ", hw.triton), ("python ", hw.python)]
    c.print(f"[dim]hardware: {escape(', '.join(label + v for label, v in labelled if v)) or 'unknown'}[/]")
    c.print(
        f"[dim]evaluated in {result.duration_s:.1f} s; reference precision {result.reference_precision}[/]"
    )
    if not result.passed and result.logs.strip():
        tail = "\n".join(result.logs.rstrip().splitlines()[-LOG_LINES_SHOWN:])
        c.print(f"[dim]worker log (last lines):\n{escape(tail)}[/]")


def _speedup(result: EvalResult) -> str:
    if result.speedup is None:
        return "not timed" if result.backend == "triton-interpret" else "-"
    text = f"{result.speedup:.3f}x"
    if result.speedup_ci is not None:
        low, high = result.speedup_ci
        text += f" (CI {low:.3f} .. {high:.3f})" + (
            " [green]real[/]" if low > 1.0 else " [yellow]not real[/]"
        )
    return text


def _case_table(result: EvalResult) -> Table:
    table = Table(show_edge=False, pad_edge=False, title="correctness", title_justify="left")
    table.add_column("case", no_wrap=True)
    table.add_column("ok", no_wrap=True)
    table.add_column("max abs err", justify="right", no_wrap=True)
    table.add_column("max rel err", justify="right", no_wrap=True)
    table.add_column("first mismatch")
    for case in result.cases:
        name = escape(case.name + (" (hidden)" if case.hidden else ""))
        table.add_row(name, _ok(case), _num(case.max_abs_error), _num(case.max_rel_error), _mismatch(case))
    return table


def _timing_table(result: EvalResult) -> Table | None:
    rows = [
        (c, r, t)
        for c in result.cases
        for r, t in sorted(c.timings.items(), key=lambda i: i[0] != result.regime)
    ]
    if not rows:
        return None
    table = Table(show_edge=False, pad_edge=False, title="timing (µs, median and CV)", title_justify="left")
    for header in ("case", "regime", "reference", "candidate", "speedup [CI]", "bound >="):
        table.add_column(header, no_wrap=True, justify="left" if header in ("case", "regime") else "right")
    for case, regime, timing in rows:
        marker = f"{regime}*" if regime == result.regime else regime
        speedup = f"{timing.speedup:.3f}x [{timing.ci_low:.3f}, {timing.ci_high:.3f}]"
        speedup += " [green]real[/]" if timing.real else ""
        cells = (_stats(timing.reference), _stats(timing.candidate), speedup, _claim(timing))
        table.add_row(escape(case.name), marker, *cells)
    return table


def _claim(timing: RegimeTiming) -> str:
    """This process's bound on the case's speedup (the CI's lower end less a cross-process margin); "-"
    when too few pairs were timed for it. One process's figure: a pull request's claims come from the
    confirmation's fresh processes (kernelbot.confirm)."""
    if timing.claim_low is None:
        return "-"
    text = f"{timing.claim_low:.3f}x"
    return f"[green]{text}[/]" if timing.claim_low > 1.0 else text


def _ok(case: CaseResult) -> str:
    if case.skipped:
        return f"[yellow]skipped[/] ({escape(case.skipped)})"
    return "[green]yes[/]" if case.passed else "[red]no[/]"


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if math.isfinite(value) else str(value)


def _mismatch(case: CaseResult) -> str:
    m = case.mismatch
    if m is None:
        return ""
    text = f"{m.output}{list(m.index)}: expected {m.expected:.6g}, got {m.actual:.6g}"
    return escape(text + (f" ({m.detail})" if m.detail else ""))


def _stats(stats: TimingStats) -> str:
    return f"{stats.median_us:.2f} ({stats.cv:.2%})"
