"""The evolve stage: a search (evolution.search, as `kernelbot evolve` runs it) in RUN/search, started once
and resumed after that.

A store that exists is never started again: an interrupted search is resumed (pending candidates judged,
nothing judged twice), and a search that already finished with a winner is only summed up again from its
store (evolution.search.finished_summary); the summary comes back as a SearchSummary. The search runs
with RUN/search.toml, which turns on the stop rule for backends that cannot time (`stop.untimed_correct`:
on the Triton interpreter the first correct candidate ends it, as every correct one scores 1.0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evolution import search
from evolution.errors import SearchError
from evolution.progress import make_progress
from evolution.search import SearchOverrides
from evolution.seeding import NOTHING_PASSED
from evolution.summary import SearchSummary
from kernelbot.console import console
from kernelbot.errors import KernelbotError
from kernelbot.target.run_dir import SEARCH_CONFIG, SEARCH_DIR

_CONFIG_TEXT = """\
# The search config of this target run (kernelbot evolve --config).
[stop]
# The first correct candidate ends the search where the evaluator cannot time (Triton's interpreter).
untimed_correct = true
"""


class NoKernelFound(KernelbotError):
    """Raised when the search ended without a candidate that passed the evaluator."""


def run_search(
    task_dir: Path, run_dir: Path, overrides: SearchOverrides, *, line_length: int = 110
) -> SearchSummary:
    """Search (or resume, or read back) RUN/search; returns the search's summary. `line_length` is the
    target engine's: the kernels written for it keep within it."""
    search_dir = run_dir / SEARCH_DIR
    config = run_dir / SEARCH_CONFIG
    if not config.is_file():
        config.write_text(f"{_CONFIG_TEXT}[mutation]\nline_length = {line_length}\n")
    resume = search.has_run(search_dir)
    if resume:
        finished = search.finished_summary(search_dir)
        if finished is not None:
            return finished
    try:
        return search.run_search(
            task_dir,
            search_dir,
            overrides,
            resume=resume,
            config_file=config,
            progress=make_progress(console),
        )
    except SearchError as exc:  # nothing to evolve from, or nothing left to try with nothing correct
        said = str(exc) if str(exc).startswith(NOTHING_PASSED) else f"{NOTHING_PASSED}: {exc}"
        raise NoKernelFound(
            f"{said}; the search is kept in {search_dir}: run `kernelbot target ...` again with --seed FILE "
            "or an --llm endpoint to continue it"
        ) from None


def search_outcome(summary: SearchSummary, run_dir: Path) -> dict[str, Any]:
    """What target.toml keeps of the search; NoKernelFound when nothing passed."""
    best = summary.best
    if best is None:
        reasons = summary.failure_reasons
        common = f"; most common failure: {reasons[0].stage}: {reasons[0].reason}" if reasons else ""
        raise NoKernelFound(
            f"no kernel passed the evaluator ({summary.evaluations} evaluation(s), outcomes "
            f"{summary.outcomes}{common}); the search is kept in {run_dir / SEARCH_DIR}: run "
            "again with more --iterations or an --llm endpoint to continue it"
        )
    return {
        "search_dir": SEARCH_DIR,
        "kernel_file": f"{SEARCH_DIR}/best.py",
        "program_id": best.program_id,
        "kernel_sha": best.sha,
        "operator": best.operator,
        "score": best.score,
        "speedup": best.speedup,
        "backend": best.backend,
        "stop_reason": summary.stop_reason or "",
        "evaluations": summary.evaluations,
        "iterations": summary.iterations,
        "sandbox": summary.sandbox,
        "elapsed_s": summary.elapsed_s,
    }
