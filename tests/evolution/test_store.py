from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from search_fakes import fake_result, make_tiny_task, program_source

from evaluators.task import load_task
from evolution.config import SearchConfig
from evolution.errors import RunStoreError
from evolution.redact import Redactor
from evolution.store import STORE_FILE, MutationRecord, PlacementRow, RunStore, new_program_id
from evolution.types import Program, TokenUsage

SECRET = "sk-test-0123456789abcdef"


@pytest.fixture
def task(tmp_path):
    return load_task(make_tiny_task(tmp_path / "task"))


def child(src: str, parent: str | None = None, it: int = 0) -> Program:
    from evolution.dedup import candidate_sha

    return Program(
        new_program_id(), src, candidate_sha(src, "scale"), parent, "tune:x", 0, it, created_at=time.time()
    )


def test_create_is_atomic_wal_and_refuses_an_existing_run(tmp_path, task) -> None:
    run = tmp_path / "run"
    store = RunStore.create(run, task, SearchConfig(), Redactor())
    store.close()
    assert (run / STORE_FILE).is_file()
    assert not (run / f"{STORE_FILE}-wal").exists()  # the last connection really closed (WAL checkpointed)
    assert not list(run.glob(".*.tmp"))  # the temporary schema file was moved into place
    with sqlite3.connect(run / STORE_FILE) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {
        "programs",
        "evaluations",
        "mutations",
        "lineage",
        "placements",
        "islands",
        "state",
        "meta",
    } <= tables
    with pytest.raises(RunStoreError, match="already holds a run"):
        RunStore.create(run, task, SearchConfig(), Redactor())
    with pytest.raises(RunStoreError, match="holds no kernelbot run"):
        RunStore.open(tmp_path / "elsewhere")


def test_meta_keeps_task_and_config(tmp_path, task) -> None:
    cfg = SearchConfig(seed=7)
    with RunStore.create(tmp_path / "run", task, cfg, Redactor()) as store:
        meta = store.meta()
        assert meta["task_name"] == "tiny_scale" and meta["entry"] == "scale"
        assert "def scale" in meta["reference_source"]
        assert store.config() == cfg


def test_lock_refuses_a_second_writer_until_closed(tmp_path, task) -> None:
    run = tmp_path / "run"
    store = RunStore.create(run, task, SearchConfig(), Redactor())
    with pytest.raises(RunStoreError, match="another kernelbot process"):
        RunStore.open(run)
    reader = RunStore.open(run, readonly=True)  # readers need no lock
    assert reader.evaluation_count() == 0
    reader.close()
    store.close()
    assert not (run / "run.lock").exists()  # a finished run leaves no stale lock behind
    RunStore.open(run).close()


def test_a_lock_file_removed_under_a_waiting_taker_is_not_taken(tmp_path) -> None:
    """The taker locked a file the releaser unlinked in between: it must lock the file now at the path."""
    from evolution.runlock import RunLock

    run = tmp_path / "run"
    run.mkdir()
    lock = RunLock(run)
    stale = os.open(lock.path, os.O_RDWR | os.O_CREAT, 0o644)  # an inode about to be unlinked
    lock.path.unlink()
    real_open = os.open
    opened: list[int] = []

    def open_stale_first(path, flags, mode=0o777):  # the first open sees the unlinked inode
        fd = os.dup(stale) if not opened else real_open(path, flags, mode)
        opened.append(fd)
        return fd

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "open", open_stale_first)
        lock.acquire()
    assert len(opened) == 2 and lock.path.exists()
    assert os.fstat(lock._fd).st_ino == os.stat(lock.path).st_ino
    lock.release()
    os.close(stale)
    assert not lock.path.exists()


def test_lock_is_released_when_the_holder_is_killed(tmp_path, task) -> None:
    run = tmp_path / "run"
    RunStore.create(run, task, SearchConfig(), Redactor()).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            from evolution.store import RunStore
            s = RunStore.open(Path({str(run)!r}))
            print("locked", flush=True)
            time.sleep(60)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunStoreError, match=f"pid {holder.pid}"):
            RunStore.open(run)
    finally:
        holder.kill()
        holder.wait()
    RunStore.open(run).close()


def test_pending_then_evaluated_in_one_transaction_each(tmp_path, task) -> None:
    with RunStore.create(tmp_path / "run", task, SearchConfig(), Redactor()) as store:
        store.ensure_islands(2)
        seed = child(program_source(1.0), it=-1)
        store.add_pending(seed)
        assert [p.id for p in store.programs(status="pending")] == [seed.id]
        result = fake_result("tiny_scale", "scale", seed.source)
        rows = [PlacementRow(seed.id, i, "seed", {"complexity": 10.0}, (0, 0), True) for i in range(2)]
        store.record_evaluation(seed.id, result, worker="w", placements=rows, state={"best_id": seed.id})
        assert store.programs(status="pending") == []
        (loaded,) = store.programs(status="evaluated")
        assert loaded.result == result
        assert loaded.features == {"complexity": 10.0}
        assert store.state("best_id") == seed.id
        assert len(store.placements()) == 2
        # a candidate is evaluated at most once: the database itself refuses a second verdict
        with pytest.raises(sqlite3.IntegrityError):
            store.record_evaluation(seed.id, result)
        assert store.evaluation_count() == 1


def test_a_failed_transaction_leaves_nothing_behind(tmp_path, task) -> None:
    with RunStore.create(tmp_path / "run", task, SearchConfig(), Redactor()) as store:
        p = child(program_source(1.0))
        store.add_pending(p)
        bad_rows = [PlacementRow("no-such-program", 0, "bred", {}, (0,), True)]  # violates the foreign key
        with pytest.raises(sqlite3.IntegrityError):
            store.record_evaluation(p.id, fake_result("t", "scale", p.source), placements=bad_rows)
        assert store.evaluation_count() == 0
        assert store.programs(status="pending")[0].id == p.id


def test_mutations_record_everything_and_sum_tokens(tmp_path, task) -> None:
    with RunStore.create(tmp_path / "run", task, SearchConfig(), Redactor([SECRET])) as store:
        parent = child(program_source(1.0), it=-1)
        store.add_pending(parent)
        store.record_evaluation(parent.id, fake_result("t", "scale", parent.source))
        kid = child(program_source(1.5), parent.id, it=0)
        store.record_mutation(
            MutationRecord(
                "evolve",
                0,
                "llm:m",
                "child",
                parent.id,
                prompt=f"key {SECRET}",
                response="ok",
                usage=TokenUsage(100, 50, 0.01),
                child=kid,
            )
        )
        store.record_mutation(
            MutationRecord(
                "evolve",
                1,
                "llm:m",
                "malformed",
                parent.id,
                response="garbage",
                error=f"no diff (auth {SECRET})",
                usage=TokenUsage(10, 5),
            )
        )
        assert store.mutation_count() == 2 and store.mutation_count("seed") == 0
        assert store.token_usage() == TokenUsage(110, 55, 0.01)
        rows = store.mutations()
        assert rows[0]["child_id"] == kid.id and rows[1]["outcome"] == "malformed"
        assert store.programs(status="pending")[0].parent_id == parent.id
    raw = (tmp_path / "run" / STORE_FILE).read_bytes()
    assert SECRET.encode() not in raw
    assert b"key ***" in raw or b"***" in raw


def test_duplicate_sha_cannot_enter_twice(tmp_path, task) -> None:
    with RunStore.create(tmp_path / "run", task, SearchConfig(), Redactor()) as store:
        src = program_source(1.0)
        store.add_pending(child(src))
        with pytest.raises(sqlite3.IntegrityError):
            store.add_pending(child(src + "\n# a comment only\n"))
        assert len(store.known_shas()) == 1


def test_stage_counts_and_evaluations_in_order(tmp_path, task) -> None:
    with RunStore.create(tmp_path / "run", task, SearchConfig(), Redactor()) as store:
        for src in (program_source(1.0), program_source(0, fail="compile"), program_source(2.0)):
            p = child(src)
            store.add_pending(p)
            store.record_evaluation(p.id, fake_result("t", "scale", src))
        assert store.stage_counts() == {"passed": 2, "compile": 1}
        assert [e["score"] for e in store.evaluations()] == [1.0, 0.0, 2.0]
    # reopening (read-only) sees the same
    with RunStore.open(tmp_path / "run", readonly=True) as reader:
        assert reader.evaluation_count() == 3
        assert json.loads(reader.meta()["config"])["seed"] == 0
