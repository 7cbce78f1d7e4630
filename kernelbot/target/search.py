"""The evolve stage: a `kernelbot evolve` search in RUN/search, started once and resumed after that.

A store that exists is never started again: an interrupted search is resumed (pending candidates judged,
nothing judged twice), and a search that already finished with a winner is only read back. The search runs
with RUN/search.toml, which turns on the stop rule for backends that cannot time (`stop.untimed_correct`:
on the Triton interpreter the first correct candidate ends it, as every correct one scores 1.0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evolution.errors import SearchError
from evolution.seeding import NOTHING_PASSED
from evolution.store import STORE_FILE, RunStore
from evolution.summary import SUMMARY_JSON, best_program, run_summary
from kernelbot.errors import KernelbotError
from kernelbot.target.options import SearchFlags

SEARCH_DIR = "search"
SEARCH_CONFIG = "search.toml"
_CONFIG_TEXT = """\
# The search config of this target run (kernelbot evolve --config).
[stop]
# The first correct candidate ends the search where the evaluator cannot time (Triton's interpreter).
untimed_correct = true
"""


class NoKernelFound(KernelbotError):
    """Raised when the search ended without a candidate that passed the evaluator."""


def run_search(
    task_dir: Path, run_dir: Path, flags: SearchFlags, *, line_length: int = 110
) -> dict[str, Any]:
    """Search (or resume, or read back) RUN/search; returns the summary of `kernelbot evolve --json`.
    `line_length` is the target engine's: the kernels written for it keep within it."""
    from kernelbot.commands import evolve as evolve_cmd

    search_dir = run_dir / SEARCH_DIR
    config = run_dir / SEARCH_CONFIG
    if not config.is_file():
        config.write_text(f"{_CONFIG_TEXT}[mutation]\nline_length = {line_length}\n")
    if (search_dir / STORE_FILE).is_file():
        finished = _finished_summary(search_dir)
        if finished is not None:
            return finished
        resume = True
    else:
        resume = False
    try:
        evolve_cmd.run(
            task_dir,
            out=search_dir,
            resume=resume,
            config_file=config,
            as_json=False,
            **flags.as_evolve_flags(),
        )
    except SearchError as exc:  # nothing to evolve from, or nothing left to try with nothing correct
        said = str(exc) if str(exc).startswith(NOTHING_PASSED) else f"{NOTHING_PASSED}: {exc}"
        raise NoKernelFound(
            f"{said}; the search is kept in {search_dir}: run `kernelbot target ...` again with --seed FILE "
            "or an --llm endpoint to continue it"
        ) from None
    return json.loads((search_dir / SUMMARY_JSON).read_text())


def _finished_summary(search_dir: Path) -> dict[str, Any] | None:
    """The summary of a search that ended with a winner (None: it has to go on)."""
    store = RunStore.open(search_dir, readonly=True)
    try:
        reason = store.state("finished")
        if not reason or best_program(store) is None or store.programs(status="pending"):
            return None
        return run_summary(store, search_dir, stop_reason=reason)
    finally:
        store.close()


def search_outcome(summary: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """What target.toml keeps of the search; NoKernelFound when nothing passed."""
    best = summary.get("best")
    if best is None:
        reasons = summary.get("failure_reasons") or []
        common = f"; most common failure: {reasons[0]['stage']}: {reasons[0]['reason']}" if reasons else ""
        raise NoKernelFound(
            f"no kernel passed the evaluator ({summary.get('evaluations', 0)} evaluation(s), outcomes "
            f"{summary.get('outcomes', {})}{common}); the search is kept in {run_dir / SEARCH_DIR}: run "
            "again with more --iterations or an --llm endpoint to continue it"
        )
    return {
        "search_dir": SEARCH_DIR,
        "kernel_file": f"{SEARCH_DIR}/best.py",
        "program_id": best["program_id"],
        "kernel_sha": best["sha"],
        "operator": best["operator"],
        "score": best["score"],
        "speedup": best.get("speedup"),
        "backend": best["backend"],
        "stop_reason": summary.get("stop_reason", ""),
        "evaluations": summary.get("evaluations", 0),
        "iterations": summary.get("iterations", 0),
        "sandbox": summary.get("sandbox", ""),
    }


def load_summary(run_dir: Path) -> dict[str, Any]:
    """The finished search's summary (evolution.summary.run_summary), as RUN/search/summary.json holds it."""
    return json.loads((run_dir / SEARCH_DIR / SUMMARY_JSON).read_text())
