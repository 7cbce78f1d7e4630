"""`kernelbot capture --repo R --function F -- CMD...`: record real calls of F and write a Task from them."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from kernelbot.commands.extract import print_summary
from kernelbot.console import console, warn


def run(
    repo: Path,
    function: str,
    command: list[str],
    *,
    max_calls: int = 8,
    out: Path | None = None,
    regime: str = "graph",
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
