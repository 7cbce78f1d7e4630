"""The run store: one SQLite database per run directory, the single source of truth of a search.

- WAL mode, synchronous=FULL: a committed evaluation survives SIGKILL (and power loss).
- One transaction per event: a mutation together with its pending child, an evaluation together with its
  placements and island counters, a migration with its placements. A child is recorded as `pending` before it
  is dispatched, so a resumed run re-dispatches it instead of mutating again, and an evaluated program is
  never evaluated twice (`evaluations.sha` is UNIQUE).
- The schema is built in a temporary file and moved into place, so a run directory never holds half a schema.
- A run lock (evolution.runlock) keeps two processes from driving one run; readers (`kernelbot best`,
  `export`) open the database read-only and need no lock.
Every text written passes through the Redactor, so API keys never reach the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from evaluators.result import EvalResult
from evaluators.task import Task
from evolution.config import SearchConfig
from evolution.errors import RunStoreError
from evolution.redact import Redactor
from evolution.runlock import RunLock
from evolution.schema import SCHEMA, SCHEMA_VERSION
from evolution.store_read import MutationRecord, PlacementRow, StoreReader, new_program_id
from evolution.types import Program

__all__ = ["STORE_FILE", "MutationRecord", "PlacementRow", "RunStore", "new_program_id"]

STORE_FILE = "run.sqlite"


class RunStore(StoreReader):
    def __init__(self, path: Path, conn: sqlite3.Connection, redact: Redactor, lock: RunLock | None) -> None:
        super().__init__(path, conn)
        self._redact = redact
        self._lock = lock
        # What the files looked like after this store's last write (None: it has not written yet; opening a
        # WAL database may create its -wal file, so the first write sets the baseline).
        self._seen: tuple[object, ...] | None = None

    # --- opening / closing ----------------------------------------------------------------------------------

    @classmethod
    def create(cls, run_dir: Path, task: Task, config: SearchConfig, redact: Redactor) -> RunStore:
        """Make a fresh run in `run_dir` (refused when one is there); the returned store holds the lock."""
        run_dir.mkdir(parents=True, exist_ok=True)
        lock = RunLock(run_dir).acquire()
        try:
            path = run_dir / STORE_FILE
            if path.exists():
                raise RunStoreError(
                    f"{run_dir} already holds a run; pass --resume to continue it or pick another --out"
                )
            tmp = run_dir / f".{STORE_FILE}.{os.getpid()}.tmp"
            tmp.unlink(missing_ok=True)
            with closing(sqlite3.connect(tmp)) as conn:
                conn.executescript(SCHEMA)
                meta = {
                    "schema_version": str(SCHEMA_VERSION),
                    "task_name": task.name,
                    "task_dir": str(task.root),
                    "entry": task.entry,
                    "regime": task.regime,
                    "reference_source": _read_text(task.reference_path),
                    "created_at": repr(time.time()),
                    "config": redact(json.dumps(config.to_dict())) or "",
                }
                conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", meta.items())
                conn.commit()
            os.replace(tmp, path)
            return cls(path, _connect(path, readonly=False), redact, lock)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def open(cls, run_dir: Path, redact: Redactor | None = None, *, readonly: bool = False) -> RunStore:
        path = run_dir / STORE_FILE
        if not path.is_file():
            raise RunStoreError(f"{run_dir} holds no kernelbot run (no {STORE_FILE}); check the path")
        lock = None if readonly else RunLock(run_dir).acquire()
        try:
            conn = _connect(path, readonly=readonly)
            store = cls(path, conn, redact or Redactor(), lock)
            version = store.meta().get("schema_version")
            if version != str(SCHEMA_VERSION):
                store.close()
                raise RunStoreError(
                    f"{path} has store schema {version}, this kernelbot reads {SCHEMA_VERSION}"
                )
            return store
        except sqlite3.DatabaseError as exc:
            if lock:
                lock.release()
            raise RunStoreError(f"{path} is not a readable kernelbot run store: {exc}") from exc
        except BaseException:
            if lock:
                lock.release()
            raise

    def use_redactor(self, redact: Redactor) -> None:
        """Mask these secrets in all text written from now on (a resumed run learns its config after open)."""
        self._redact = redact

    def close(self) -> None:
        try:
            self._conn.close()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._check_untouched()
        try:
            with self._conn:  # commits on success, rolls back on any exception
                yield self._conn
        finally:
            self._seen = self._stamp()

    def _stamp(self) -> tuple[object, ...]:
        """The store's files (size, mtime, inode) and SQLite's count of other connections' commits: kernelbot
        holds the run lock, so between two of its own writes none of these may change."""
        files: list[tuple[int, int, int] | None] = []
        for name in (self.path.name, f"{self.path.name}-wal"):
            try:
                st = os.stat(self.path.with_name(name))
                files.append((st.st_size, st.st_mtime_ns, st.st_ino))
            except OSError:
                files.append(None)
        try:
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            version = None
        return (*files, version)

    def _check_untouched(self) -> None:
        """Refuse to go on with a store something else wrote to (an evaluated candidate, through a path the
        evaluator did not see): its scores can no longer be trusted."""
        if self._lock is None or self._seen is None or self._stamp() == self._seen:
            return
        raise RunStoreError(
            f"{self.path} was changed by another process since kernelbot last wrote to it (a candidate "
            "under evaluation?): its scores cannot be trusted; start a new run, and judge the candidates of "
            "this one again with kernelbot eval"
        )

    # --- meta and state -------------------------------------------------------------------------------------

    def update_config(self, config: SearchConfig) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE meta SET value = ? WHERE key = 'config'",
                (self._redact(json.dumps(config.to_dict())),),
            )

    def set_state(self, **values: Any) -> None:
        with self._tx() as c:
            _write_state(c, values)

    # --- writing --------------------------------------------------------------------------------------------

    def add_pending(self, program: Program) -> None:
        """A program (seed file) recorded before its evaluation is dispatched."""
        with self._tx() as c:
            self._insert_program(c, program)

    def record_mutation(self, rec: MutationRecord) -> int:
        with self._tx() as c:
            if rec.child is not None:
                self._insert_program(c, rec.child)
                for insp in rec.inspiration_ids:
                    c.execute(
                        "INSERT OR IGNORE INTO lineage VALUES (?, ?, 'inspiration')", (rec.child.id, insp)
                    )
            r = self._redact
            cur = c.execute(
                "INSERT INTO mutations(phase, iteration, operator, outcome, parent_id, island, mode,"
                " inspiration_ids, prompt, response, error, prompt_tokens, completion_tokens, cost_usd,"
                " duration_s, child_id, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    rec.phase,
                    rec.iteration,
                    rec.operator,
                    rec.outcome,
                    rec.parent_id,
                    rec.island,
                    rec.mode,
                    json.dumps(list(rec.inspiration_ids)),
                    r(rec.prompt),
                    r(rec.response),
                    r(rec.error) or "",
                    rec.usage.prompt_tokens,
                    rec.usage.completion_tokens,
                    rec.usage.cost_usd,
                    rec.duration_s,
                    rec.child.id if rec.child else None,
                    time.time(),
                ),
            )
            return int(cur.lastrowid or 0)

    def record_evaluation(
        self,
        program_id: str,
        result: EvalResult,
        *,
        worker: str = "",
        attempts: int = 1,
        placements: list[PlacementRow] = (),  # type: ignore[assignment]
        island_generation: tuple[int, int] | None = None,
        state: dict[str, Any] | None = None,
    ) -> int:
        """The evaluation, where its program landed, and the controller's counters: one transaction."""
        # Every text of the result a candidate can reach (logs, reason, evidence, notes), by value.
        result = result.redacted(lambda text: self._redact(text) or "")
        now = time.time()
        with self._tx() as c:
            row = c.execute("SELECT sha, status FROM programs WHERE id = ?", (program_id,)).fetchone()
            if row is None:
                raise RunStoreError(f"no program {program_id} in {self.path}")
            cur = c.execute(
                "INSERT INTO evaluations(program_id, sha, stage, passed, correct, score, speedup, hacks,"
                " result_json, worker, attempts, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    program_id,
                    row[0],
                    result.stage.value,
                    int(result.passed),
                    int(result.correct),
                    result.score,
                    result.speedup,
                    len(result.hacks),
                    result.to_json(),
                    worker,
                    attempts,
                    now,
                ),
            )
            c.execute(
                "UPDATE programs SET status = 'evaluated', evaluated_at = ? WHERE id = ?", (now, program_id)
            )
            _write_placements(c, placements)
            if island_generation is not None:
                c.execute("UPDATE islands SET generation = ? WHERE id = ?", island_generation[::-1])
            if state:
                _write_state(c, state)
            return int(cur.lastrowid or 0)

    def record_migration(self, epoch: int, placements: list[PlacementRow]) -> None:
        with self._tx() as c:
            _write_placements(c, placements)
            _write_state(c, {"migration_epoch": epoch})

    def ensure_islands(self, count: int) -> None:
        with self._tx() as c:
            c.executemany(
                "INSERT OR IGNORE INTO islands(id, generation) VALUES (?, 0)", [(i,) for i in range(count)]
            )

    def _insert_program(self, c: sqlite3.Connection, p: Program) -> None:
        c.execute(
            "INSERT INTO programs(id, sha, source, parent_id, operator, island, iteration, status,"
            " created_at) VALUES (?,?,?,?,?,?,?,'pending',?)",
            (
                p.id,
                p.sha,
                self._redact(p.source),
                p.parent_id,
                p.operator,
                p.island,
                p.iteration,
                p.created_at,
            ),
        )
        if p.parent_id:
            c.execute("INSERT OR IGNORE INTO lineage VALUES (?, ?, 'parent')", (p.id, p.parent_id))

    # --- reading --------------------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    else:
        conn = sqlite3.connect(path, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _write_state(c: sqlite3.Connection, values: dict[str, Any]) -> None:
    c.executemany(
        "INSERT INTO state(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(k, json.dumps(v)) for k, v in values.items()],
    )


def _write_placements(c: sqlite3.Connection, placements: list[PlacementRow]) -> None:
    c.executemany(
        "INSERT INTO placements(program_id, island, kind, features, cell, placed, created_at)"
        " VALUES (?,?,?,?,?,?,?)",
        [
            (
                p.program_id,
                p.island,
                p.kind,
                json.dumps(p.features),
                json.dumps(list(p.cell)),
                int(p.placed),
                time.time(),
            )
            for p in placements
        ],
    )
