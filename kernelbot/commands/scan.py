"""`kernelbot scan --repo R [--profile-cmd CMD] [--top N] [--json]`: rank functions worth a fused kernel.

R is a directory or `pypi:NAME==VERSION` (a release unpacked into the source cache, as `extract` takes it).
Function names are printed whole, each row's name last on its line and never wrapped, so that one can be
copied into `kernelbot extract --function`; files the parser could not read are named, not skipped quietly.

With `--profile P` it is the periodic bot instead (`run_periodic`, kernelbot.scan): rank, skip what is
proposed, merged or refused, and run `kernelbot target` on the best remaining region.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from kernelbot.console import console, warn

if TYPE_CHECKING:
    from extractors.scan_profile import ProfiledFunction
    from extractors.scan_static import StaticScan
    from kernelbot.scan import ScanOptions

UNPARSED_SHOWN = 20  # files named one per line; the count covers the rest


def run(
    repo: Path | str,
    *,
    profile_cmd: str | None = None,
    top: int = 20,
    as_json: bool = False,
    timeout: float = 1800.0,
) -> int:
    from extractors.errors import ExtractionError
    from extractors.extract import resolve_repo
    from extractors.scan_profile import profile_command
    from extractors.scan_static import scan_static

    if top < 1:
        raise ExtractionError("--top must be at least 1")
    given = str(repo)
    root = resolve_repo(repo)
    if not root.is_dir():
        raise ExtractionError(f"--repo {given} is not a directory")
    scan = scan_static(root, top)
    _check_readable(given, scan)
    dynamic, cuda = profile_command(root, profile_cmd, top, timeout) if profile_cmd else ([], False)
    if as_json:
        payload: dict[str, object] = {
            "repo": str(root.resolve()),
            "static": [h.to_dict() for h in scan.hotspots],
            "files": scan.files,
            "unparsed": [{"path": u.path, "reason": u.reason} for u in scan.unparsed],
        }
        if profile_cmd:
            payload["dynamic"] = {
                "command": profile_cmd,
                "measure": "gpu" if cuda else "cpu",
                "functions": [p.to_dict() for p in dynamic],
            }
        console.print_json(json.dumps(payload))
        return 0
    _print_static(given, scan)
    if profile_cmd:
        _print_profile(profile_cmd, dynamic, cuda)
    _print_unparsed(scan)
    best = (dynamic[0].target if dynamic else "") or (scan.hotspots[0].target if scan.hotspots else "")
    if best:
        _line(f"next: kernelbot extract --repo {given} --function {best}")
    return 0


def _check_readable(given: str, scan: StaticScan) -> None:
    from extractors.errors import ExtractionError

    if not scan.files:
        raise ExtractionError(
            f"--repo {given} holds no Python file to rank (tests, benchmarks, examples and docs are not read)"
        )
    if len(scan.unparsed) == scan.files:
        first = scan.unparsed[0]
        raise ExtractionError(
            f"--repo {given}: none of its {scan.files} Python file(s) could be parsed "
            f"(e.g. {first.path}: {first.reason}); is it Python 3 source?"
        )


def _print_static(given: str, scan: StaticScan) -> None:
    read = f"{scan.files} file(s) read" + (f", {len(scan.unparsed)} not parsed" if scan.unparsed else "")
    _line(f"static ranking of {given} ({read})")
    if not scan.hotspots:
        _line("  no function holds three or more PyTorch ops: nothing here to fuse")
        return
    _line(f"{'#':>4}  {'score':>7}  function")
    for rank, hot in enumerate(scan.hotspots, 1):
        _line(f"{rank:>4}  {hot.score:>7.1f}  {hot.target}")
        _line(f"{'':>15}{hot.evidence}")


def _print_profile(command: str, rows: list[ProfiledFunction], cuda: bool) -> None:
    measure = "GPU" if cuda else "CPU (no CUDA here)"
    _line("")
    _line(f"profiled: {command} - {measure} time by function")
    regime = f"{'runs in':>8}  " if cuda else ""
    header = f"{'#':>4}  {'time ms':>9}  {'share':>6}  {'ops':>6}  {'kernels':>7}  {'host ms':>9}  {regime}"
    _line(header + "function")
    for rank, row in enumerate(rows, 1):
        # On a GPU: "graph" when most of the region's GPU time is replayed from CUDA graphs, else "eager".
        runs_in = f"{'graph' if row.regime == 'graph' else 'eager':>8}  " if cuda else ""
        _line(
            f"{rank:>4}  {row.time_us / 1000:>9.2f}  {row.share:>6.1%}  {row.ops:>6}  {row.kernels:>7}  "
            f"{row.host_us / 1000:>9.2f}  {runs_in}{row.target}"
        )


def _print_unparsed(scan: StaticScan) -> None:
    if not scan.unparsed:
        return
    warn(f"{len(scan.unparsed)} file(s) could not be parsed, so their functions are not ranked:")
    for item in scan.unparsed[:UNPARSED_SHOWN]:
        warn(escape(f"  {item.path}: {item.reason}"))
    if len(scan.unparsed) > UNPARSED_SHOWN:
        warn(f"  and {len(scan.unparsed) - UNPARSED_SHOWN} more (--json lists them all)")


def _line(text: str) -> None:
    # Never wrapped (the console soft-wraps): a qualified name stays one piece to copy.
    console.print(text, markup=False, highlight=False)


def run_periodic(options: ScanOptions) -> int:
    """`kernelbot scan --profile P ...`: one scan of the bot (kernelbot.scan); prints what it did and why."""
    from kernelbot.scan import run_scan

    outcome = run_scan(options)
    for line in outcome.lines():
        console.print(line, markup=False, highlight=False)
    return 0
