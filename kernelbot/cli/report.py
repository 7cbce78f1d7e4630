"""`report`: a run directory written out as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelbot.cli.application import command


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
