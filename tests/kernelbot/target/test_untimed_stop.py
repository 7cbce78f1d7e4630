"""The search's stop rule for backends that cannot time: with `stop.untimed_correct`, the first correct
candidate ends the search (every correct one would score 1.0), and a resumed run remembers it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from evaluators.result import Stage
from evaluators.task import load_task
from evolution.config import SearchConfig, StopConfig
from evolution.controller import Controller
from evolution.executors import Evaluated
from evolution.operators import OperatorSet
from evolution.redact import Redactor
from evolution.store import RunStore
from tests.evolution.search_fakes import BumpMutator, FakeExecutor, make_tiny_task, program_source


class UntimedExecutor(FakeExecutor):
    """Judges like the fake executor, then drops the timing, as the interpreter backend does."""

    async def evaluate(self, task, source: str) -> Evaluated:  # type: ignore[no-untyped-def]
        evaluated = await super().evaluate(task, source)
        r = evaluated.result
        if r.passed:
            cases = tuple(replace(c, timings={}) for c in r.cases)
            r = replace(r, stage=Stage.CORRECTNESS, score=1.0, speedup=None, speedup_ci=None, cases=cases)
        return Evaluated(r, evaluated.worker, evaluated.attempts)


def search(
    tmp_path: Path, stop: StopConfig, executor: FakeExecutor, seeds: list[str], *, resume: bool = False
):
    task_dir = tmp_path / "task"
    if not task_dir.exists():
        make_tiny_task(task_dir, seeds)
    task = load_task(task_dir)
    config = SearchConfig(stop=stop)
    run_dir = tmp_path / "run"
    store = (
        RunStore.open(run_dir, Redactor()) if resume else RunStore.create(run_dir, task, config, Redactor())
    )
    try:
        controller = Controller(task, config, store, executor, OperatorSet.of([BumpMutator()]))
        return asyncio.run(controller.run())
    finally:
        store.close()


def test_the_first_correct_untimed_candidate_stops_the_search(tmp_path: Path) -> None:
    seeds = [program_source(0.0, fail="correctness"), program_source(1.0)]
    summary = search(tmp_path, StopConfig(iterations=20, untimed_correct=True), UntimedExecutor(), seeds)
    assert summary.stop_reason.startswith("untimed: a candidate is correct")
    assert summary.iterations == 0 and summary.evaluations == 2  # the two seeds, nothing bred
    # Resumed with a larger budget, the run still has its correct candidate: it stops at once.
    again = search(
        tmp_path, StopConfig(iterations=40, untimed_correct=True), UntimedExecutor(), seeds, resume=True
    )
    assert again.stop_reason.startswith("untimed") and again.evaluations == 2


def test_the_rule_waits_for_a_correct_candidate(tmp_path: Path) -> None:
    # Only a wrong seed: the rule does not fire, the search goes on until its other limits.
    seeds = [program_source(0.0, fail="correctness")]
    summary = search(tmp_path, StopConfig(iterations=3, untimed_correct=True), UntimedExecutor(), seeds)
    assert summary.stop_reason.startswith(("iterations", "exhausted", "no program"))


def test_off_by_default_and_never_on_timed_results(tmp_path: Path) -> None:
    seeds = [program_source(1.0)]
    untimed = search(tmp_path / "a", StopConfig(iterations=3), UntimedExecutor(), seeds)
    assert untimed.stop_reason.startswith("iterations") and untimed.iterations == 3
    timed = search(tmp_path / "b", StopConfig(iterations=3, untimed_correct=True), FakeExecutor(), seeds)
    assert timed.stop_reason.startswith("iterations") and timed.iterations == 3
