"""`kernelbot export RUN --format sft|grpo`: a run's trajectories as JSONL training data (no secrets)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from evolution.export import FORMATS, Exporter
from evolution.redact import Redactor
from evolution.store import RunStore
from kernelbot.cli.application import command
from kernelbot.console import err_console
from kernelbot.errors import ConfigError


@command("export")
def export_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory of `kernelbot evolve`.", metavar="run")],
    fmt: Annotated[str, typer.Option("--format", help="sft | grpo")] = "sft",
    out: Annotated[Optional[Path], typer.Option(help="JSONL file (default: stdout).")] = None,  # noqa: UP045
) -> int:
    """Export RUN's trajectories as JSONL training data (Kernel-Smith recipe); secrets never appear."""
    return run(run_dir, fmt=fmt, out=out)


def run(run_dir: Path, *, fmt: str, out: Path | None) -> int:
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    with RunStore.open(run_dir, readonly=True) as store:
        exporter = Exporter(store, Redactor.from_env(store.config()))
    if out is None:
        count = exporter.write(fmt, sys.stdout)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        try:
            with tmp.open("w") as fh:
                count = exporter.write(fmt, fh)
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
    err_console.print(f"{count} {fmt} row(s)" + (f" written to {out}" if out else ""))
    return 0
