"""`kernelbot scan --repo R [--profile-cmd CMD] [--top N] [--json]`: rank functions worth a fused kernel.

With `--profile P` it is the periodic bot instead (`run_periodic`, kernelbot.scan): rank, skip what is
proposed, merged or refused, and run `kernelbot target` on the best remaining region.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from kernelbot.console import console

if TYPE_CHECKING:
    from kernelbot.scan import ScanOptions


def run(
    repo: Path,
    *,
    profile_cmd: str | None = None,
    top: int = 20,
    as_json: bool = False,
    timeout: float = 1800.0,
) -> int:
    from extractors.errors import ExtractionError
    from extractors.scan_profile import profile_command
    from extractors.scan_static import rank_static

    if top < 1:
        raise ExtractionError("--top must be at least 1")
    if not Path(repo).is_dir():
        raise ExtractionError(f"--repo {repo} is not a directory")
    static = rank_static(repo, top)
    dynamic, cuda = profile_command(repo, profile_cmd, top, timeout) if profile_cmd else ([], False)
    if as_json:
        payload: dict[str, object] = {
            "repo": str(Path(repo).resolve()),
            "static": [h.to_dict() for h in static],
        }
        if profile_cmd:
            payload["dynamic"] = {
                "command": profile_cmd,
                "measure": "gpu" if cuda else "cpu",
                "functions": [p.to_dict() for p in dynamic],
            }
        console.print_json(json.dumps(payload))
        return 0
    table = Table(title=f"static ranking of {repo}", show_lines=False)
    for column in ("#", "score", "function", "evidence"):
        table.add_column(column, overflow="fold")
    for rank, hot in enumerate(static, 1):
        table.add_row(str(rank), f"{hot.score:.1f}", hot.target, hot.evidence)
    console.print(table)
    if profile_cmd:
        measure = "GPU" if cuda else "CPU (no CUDA here)"
        table = Table(title=f"profiled: {profile_cmd} — {measure} time by function")
        for column in ("#", "time ms", "share", "ops", "kernels", "host ms", "function"):
            table.add_column(column, overflow="fold")
        for rank, row in enumerate(dynamic, 1):
            table.add_row(
                str(rank),
                f"{row.time_us / 1000:.2f}",
                f"{row.share:.1%}",
                str(row.ops),
                str(row.kernels),
                f"{row.host_us / 1000:.2f}",
                row.target,
            )
        console.print(table)
    console.print("next: kernelbot extract --repo REPO --function <function>")
    return 0


def run_periodic(options: ScanOptions) -> int:
    """`kernelbot scan --profile P ...`: one scan of the bot (kernelbot.scan); prints what it did and why."""
    from kernelbot.scan import run_scan

    outcome = run_scan(options)
    for line in outcome.lines():
        console.print(line, markup=False, highlight=False)
    return 0
