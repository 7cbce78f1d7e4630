"""`kernelbot capture --repo R --function F -- CMD...`: record real calls of F and write a Task from them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from kernelbot.cli.application import command
from kernelbot.cli.extract import REGIME_HELP, print_summary
from kernelbot.console import console, warn


@command("capture")
def capture_command(
    repo: Annotated[Path, typer.Option(help="Repository holding the function.")],
    function: Annotated[str, typer.Option(help="package.module:Qualname or path/to/file.py:Qualname.")],
    cmd: Annotated[Optional[list[str]], typer.Argument(help="Command to run, after `--`.")] = None,  # noqa: UP045
    max_calls: Annotated[int, typer.Option(help="Distinct call signatures to record.")] = 8,
    out: Annotated[Optional[Path], typer.Option(help="Task directory to write.")] = None,  # noqa: UP045
    regime: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help=REGIME_HELP),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing task at --out.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds the command may run.")] = 1800.0,
) -> int:
    """Run CMD with FUNCTION wrapped, record its first distinct calls, and write a Task that replays them."""
    return run(
        repo,
        function,
        list(cmd or []),
        max_calls=max_calls,
        out=out,
        regime=regime,
        force=force,
        timeout=timeout,
    )


def run(
    repo: Path,
    function: str,
    command: list[str],
    *,
    max_calls: int = 8,
    out: Path | None = None,
    regime: str | None = None,
    force: bool = False,
    timeout: float = 1800.0,
) -> int:
    from extractors.capture import CaptureOptions, capture

    options = CaptureOptions(repo, function, command, max_calls, out, regime, force, timeout)
    summary, calls = capture(options)
    console.print(f"recorded {len(calls)} distinct call(s) of {function}:")
    for call in calls:
        if "skipped" in call:
            warn(escape(f"{call['call']} not kept: {call['skipped']}"))
    print_summary(summary)
    return 0
