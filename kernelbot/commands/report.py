"""`kernelbot report RUN [--out FILE] [--open]`: the run's HTML report (RUN/report.html by default)."""

from __future__ import annotations

import webbrowser
from pathlib import Path

from kernelbot import exit_codes
from kernelbot.console import console, warn


def run(run_dir: Path, *, out: Path | None, open_browser: bool) -> int:
    from kernelbot.report import write_report  # matplotlib is imported only when a report is made

    path = write_report(run_dir, out)
    console.print(f"report written to {path}", markup=False)
    if open_browser and not webbrowser.open(path.resolve().as_uri()):
        warn(f"no web browser could be started here; open {path} yourself")
    return exit_codes.OK
