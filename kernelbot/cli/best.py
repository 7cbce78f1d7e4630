"""`kernelbot best RUN`: the winning candidate of a run (printed, or written with --out) and its verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from evolution.store import RunStore
from evolution.summary import best_program, program_summary
from kernelbot import exit_codes
from kernelbot.cli.application import command
from kernelbot.console import console, err_console


@command("best")
def best_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory of `kernelbot evolve`.", metavar="run")],
    out: Annotated[
        Optional[Path], typer.Option(help="Write the winning candidate here instead of printing it.")  # noqa: UP045
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the winner's summary as JSON.")] = False,
) -> int:
    """Print (or write) the best candidate of RUN with its EvalResult summary. Exit 4 when none is correct."""
    return run(run_dir, out=out, as_json=as_json)


def run(run_dir: Path, *, out: Path | None, as_json: bool) -> int:
    with RunStore.open(run_dir, readonly=True) as store:
        best = best_program(store)
        evaluations = store.evaluation_count()
    if best is None:
        err_console.print(f"{run_dir}: no correct candidate among {evaluations} evaluation(s) yet")
        return exit_codes.REJECTED
    summary = program_summary(best)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(best.source)
        summary["candidate_file"] = str(out)
    if as_json:
        console.print(json.dumps(summary, indent=2, default=str), markup=False, highlight=False)
        return exit_codes.OK
    target = err_console if out is None else console  # keep stdout pure source when printing the code
    target.print(_describe(summary), markup=False, highlight=False)
    if out is None:
        console.print(best.source, markup=False, highlight=False, end="")
    else:
        console.print(f"written to {out}")
    return exit_codes.OK


def _describe(s: dict) -> str:
    lines = [
        f"best of run: {s['program_id']} ({s['operator']}), score {s['score']:.4f}"
        + (f", speedup {s['speedup']:.3f}x" if s.get("speedup") else "")
        + f" [{s['regime']} regime, {s['backend']}{', ' + s['device'] if s['device'] else ''}]"
    ]
    for case in s["cases"]:
        if case.get("skipped"):  # not run (e.g. over the interpreter's size cap): neither ok nor failed
            lines.append(f"  {case['name']}: skipped ({case['skipped']})")
            continue
        parts = [f"  {case['name']}: {'ok' if case['passed'] else 'FAILED'}"]
        for regime in ("graph", "wall"):
            t = case.get(regime)
            if t:
                text = f"{regime} {t['speedup']:.3f}x [{t['ci'][0]:.3f}, {t['ci'][1]:.3f}]"
                if t.get("claim_low") is not None:  # this process's bound, not a PR's claim
                    text += f" bound>={t['claim_low']:.3f}"
                parts.append(text)
        if case.get("max_abs_error") is not None:
            parts.append(f"max abs err {case['max_abs_error']:.2e}")
        lines.append("  ".join(parts))
    lines.append(
        "  (as the search measured them, one process beside its own workers; the largest of many noisy "
        "estimates reads high: a pull request states only what `kernelbot target`'s confirmation measures "
        "in fresh processes)"
    )
    return "\n".join(lines)
