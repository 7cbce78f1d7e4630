"""What the operating-system sandbox cannot see, checked by the evaluator itself (real pool, interpreter):
an ATen kernel re-registered inside the worker, the task's files rewritten through a shared mapping, and the
run store opened from a candidate. The last two are shown on a pool without the box, the layer on its own:
in a box the task is a read-only copy and the run store is out of sight (test_os_sandbox.py)."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from suite import (
    CHEATS,
    LEGIT,
    RUNTIME_ONLY,
    SUITE_CONFIG,
    TASK_TAMPER_CHEATS,
    describe,
    hack_numbers,
    task_dir,
)

from evaluators.pool import WorkerPool
from evaluators.result import Stage, failure
from evaluators.task import load_task
from evolution.config import SearchConfig
from evolution.errors import RunStoreError
from evolution.redact import Redactor
from evolution.store import RunStore
from evolution.types import Program


@pytest.fixture(scope="module")
def unboxed_pool() -> Iterator[WorkerPool]:
    """A pool whose workers run without the OS box, so that only the runtime checks stand in the way."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELBOT_SANDBOX", "off")
        pool = WorkerPool("triton-interpret", size=2, config=SUITE_CONFIG)
    with pool:
        yield pool


WRONG_KERNEL = (LEGIT / "scale_add_triton.py").read_text().replace("x * alpha + y", "x * alpha - y")


@pytest.mark.parametrize(
    ("cheat", "said"),
    [
        ("c17_torch_library.py", "registers a kernel with the dispatcher: impl('add.Tensor', 'CPU')"),
        ("c17b_dispatch_unwrapped.py", "ATen kernel: aten::add.Tensor: CPU kernel registered"),
    ],
)
def test_a_re_registered_aten_kernel_is_flagged_with_the_operator_and_where(
    judge_pool, cheat: str, said: str
) -> None:
    result = judge_pool.evaluate(task_dir("scale_add"), (CHEATS / cheat).read_text(), config=RUNTIME_ONLY)
    assert not result.passed and result.score == 0.0, describe(result)
    evidence = [h.evidence for h in result.hacks if h.kind == "kernel_override"]
    assert any(said in e for e in evidence), describe(result)
    # Without the re-registration the same kernel is simply wrong.
    plain = judge_pool.evaluate(task_dir("scale_add"), WRONG_KERNEL)
    assert not plain.passed and not plain.hacks, describe(plain)


@pytest.mark.parametrize("cheat", TASK_TAMPER_CHEATS, ids=lambda c: c.id)
def test_a_task_rewritten_through_a_shared_mapping_is_restored_and_flagged(
    unboxed_pool, cheat, tmp_path: Path
) -> None:
    task = tmp_path / "scale_add"
    shutil.copytree(task_dir(cheat.task), task)
    before = {p.name: p.read_bytes() for p in task.iterdir() if p.is_file()}

    # The static checks would stop this one before it runs; a better-hidden payload would not.
    result = unboxed_pool.evaluate(task, cheat.source, config=RUNTIME_ONLY)
    assert not result.passed and result.score == 0.0, describe(result)
    assert cheat.klass in hack_numbers(result), describe(result)
    evidence = next(h.evidence for h in result.hacks if h.kind == "task_tamper")
    assert "reference.py rewritten" in evidence, evidence
    assert {p.name: p.read_bytes() for p in task.iterdir() if p.is_file()} == before

    # The next evaluation of the wrong kernel is judged against the real reference.
    again = unboxed_pool.evaluate(task, WRONG_KERNEL)
    assert not again.passed and not again.correct, describe(again)


def test_the_run_store_opened_by_a_candidate_is_flagged_and_keeps_the_scores(
    unboxed_pool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    task = load_task(task_dir("scale_add"))
    with RunStore.create(run, task, SearchConfig(), Redactor()) as store:
        for i, score in enumerate((1.5, 2.25)):
            program = Program(f"p{i}", f"# rival {i}\n", f"sha{i}", None, "seed:file", 0, -1)
            store.add_pending(program)
            result = failure(task.name, f"sha{i}", "triton-interpret", "graph", Stage.TIMING, "correct")
            store.record_evaluation(program.id, result.with_updates(passed=True, correct=True, score=score))
    monkeypatch.chdir(run)  # the search's working directory: the candidate finds run.sqlite beside it

    result = unboxed_pool.evaluate(task.root, (CHEATS / "c19_store_sqlite.py").read_text())
    assert not result.passed and result.score == 0.0, describe(result)
    evidence = next((h.evidence for h in result.hacks if h.kind == "store_tamper"), describe(result))
    assert str(run / "run.sqlite") in evidence, evidence
    with sqlite3.connect(run / "run.sqlite") as db:
        scores = [row[0] for row in db.execute("SELECT score FROM evaluations ORDER BY program_id")]
    assert scores == [1.5, 2.25]


def test_a_run_store_written_by_another_process_stops_the_search(tmp_path: Path) -> None:
    """The backstop behind the audit hook: a write the evaluator did not see is found at the store's next
    write, before anything else is recorded on top of it."""
    task = load_task(task_dir("scale_add"))
    with RunStore.create(tmp_path / "run", task, SearchConfig(), Redactor()) as store:
        store.set_state(best_id="p0")
        store.set_state(best_id="p1")  # its own writes are no change
        with sqlite3.connect(tmp_path / "run" / "run.sqlite") as other:
            other.execute("UPDATE state SET value = '\"p9\"' WHERE key = 'best_id'")
        with pytest.raises(RunStoreError, match="changed by another process"):
            store.set_state(best_id="p2")
