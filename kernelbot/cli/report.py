"""`kernelbot report RUN [--out FILE] [--open]`: the run's HTML report (RUN/report.html by default)."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelbot import exit_codes
from kernelbot.cli.application import command
from kernelbot.console import console, warn


@command("report")
def report_command(
    run_dir: Annotated[
        Path, typer.Argument(help="Run directory of `kernelbot evolve` or `kernelbot target`.", metavar="run")
    ],
    out: Annotated[
        Optional[Path], typer.Option(help="HTML file to write (default RUN/report.html).")  # noqa: UP045
    ] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the report in a web browser.")] = False,
) -> int:
    """Write RUN's report: one self-contained HTML page (plots, the winner's speedups, lineage and code)."""
    return run(run_dir, out=out, open_browser=open_browser)


def run(run_dir: Path, *, out: Path | None, open_browser: bool) -> int:
    from kernelbot.report import write_report  # matplotlib is imported only when a report is made

    path = write_report(run_dir, out)
    console.print(f"report written to {path}", markup=False)
    if open_browser and not webbrowser.open(path.resolve().as_uri()):
        warn(f"no web browser could be started here; open {path} yourself")
    return exit_codes.OK
