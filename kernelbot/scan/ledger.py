"""STATE/ledger.sqlite: what the scans of one repository have seen and done, as a cache.

    regions   every region a ranking listed (target, its PR branch, first and last seen)
    rankings  the ranking of each base commit (so an unchanged commit is not profiled again)
    runs      each target run a scan started (region, base, why, status, error, kernel, PR action)
    tasks     the task each run extracted (entry, name, where its inputs came from)
    kernels   each winning kernel (hash, region, score, speedup, backend, where its source is)
    prs       the forge's kernelbot PRs as the last sync read them (number, branch, state, marker)
    scans     one row per scan (base, ranking, what it did, as JSON)

The forge is the truth for PRs (ARCHITECTURE.md, "State"): every scan re-reads the PRs from the forge's
markers and rewrites `prs` from them, and no decision about a PR is taken from this file. Losing it costs a
profile run and the record of failed attempts; it never causes a duplicate PR. Written in WAL mode, one
short transaction per change, so a killed scan leaves a consistent file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelbot.errors import RunStateError
from kernelbot.forge.types import PullRequest
from kernelbot.scan.ranking import Ranking, Region

LEDGER_FILE = "ledger.sqlite"
SCHEMA = 1
RUNNING, DONE, FAILED, HANDS_OFF = "running", "done", "failed", "hands-off"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS regions (
    target TEXT PRIMARY KEY, branch TEXT NOT NULL, path TEXT NOT NULL,
    first_seen REAL NOT NULL, last_seen REAL NOT NULL, last_base TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rankings (
    base_sha TEXT NOT NULL, recipe TEXT NOT NULL, source TEXT NOT NULL, note TEXT NOT NULL,
    regions TEXT NOT NULL, made_at REAL NOT NULL, PRIMARY KEY (base_sha, recipe));
CREATE TABLE IF NOT EXISTS runs (
    run_dir TEXT PRIMARY KEY, target TEXT NOT NULL, base_sha TEXT NOT NULL, purpose TEXT NOT NULL,
    status TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', kernel_hash TEXT NOT NULL DEFAULT '',
    pr_action TEXT NOT NULL DEFAULT '', pr_number INTEGER, started_at REAL NOT NULL, finished_at REAL);
CREATE TABLE IF NOT EXISTS tasks (
    run_dir TEXT PRIMARY KEY, target TEXT NOT NULL, entry TEXT NOT NULL, name TEXT NOT NULL,
    inputs TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kernels (
    kernel_hash TEXT PRIMARY KEY, target TEXT NOT NULL, run_dir TEXT NOT NULL, source_file TEXT NOT NULL,
    score REAL NOT NULL, speedup REAL, backend TEXT NOT NULL, base_sha TEXT NOT NULL, found_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS prs (
    number INTEGER PRIMARY KEY, branch TEXT NOT NULL, state TEXT NOT NULL, op TEXT NOT NULL,
    kernel_hash TEXT NOT NULL, base_sha TEXT NOT NULL, pushed_commit TEXT NOT NULL, head_sha TEXT NOT NULL,
    url TEXT NOT NULL, synced_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS scans (
    id INTEGER PRIMARY KEY AUTOINCREMENT, started_at REAL NOT NULL, finished_at REAL,
    base_sha TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '{}');
"""


@dataclass(frozen=True)
class RunRecord:
    run_dir: str
    target: str
    base_sha: str
    purpose: str  # "new" | "refresh"
    status: str  # RUNNING | DONE | FAILED | HANDS_OFF
    error: str
    kernel_hash: str
    pr_action: str
    pr_number: int | None
    started_at: float
    finished_at: float | None


@dataclass(frozen=True)
class KernelRecord:
    kernel_hash: str
    target: str
    run_dir: str
    source_file: str  # the winning candidate (RUN/search/best.py), a seed for a later run
    score: float
    speedup: float | None
    backend: str
    base_sha: str


class Ledger:
    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    @classmethod
    def open(cls, path: Path) -> Ledger:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(path, timeout=30, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            with conn:
                conn.executescript(_TABLES)
                found = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                if found is None:
                    conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
                elif found["value"] != str(SCHEMA):
                    raise RunStateError(
                        f"{path} is a scan ledger of schema {found['value']}; this kernelbot reads {SCHEMA}: "
                        "delete it (it is a cache: the next scan rebuilds it from the forge)"
                    )
        except sqlite3.DatabaseError as exc:
            raise RunStateError(
                f"cannot open the scan ledger {path} ({exc}): delete it (it is a cache: the next scan "
                "rebuilds it from the forge)"
            ) from exc
        return cls(path, conn)

    def close(self) -> None:
        self._conn.close()

    def _write(self, sql: str, args: Iterable[Any] = ()) -> sqlite3.Cursor:
        with self._conn:
            return self._conn.execute(sql, tuple(args))

    # --- what the state directory scans -------------------------------------------------------------------

    def claim_source(self, source: str) -> None:
        """Tie the ledger to the repository it scans; RunStateError when it scans another."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'source'").fetchone()
        if row is None:
            self._write("INSERT INTO meta VALUES ('source', ?)", (source,))
        elif row["value"] != source:
            raise RunStateError(
                f"the scan state in {self.path.parent} belongs to scans of {row['value']}, not {source}: "
                "pass another --state-dir"
            )

    # --- scans --------------------------------------------------------------------------------------------

    def start_scan(self, base_sha: str) -> int:
        scan_id = self._write(
            "INSERT INTO scans (started_at, base_sha) VALUES (?, ?)", (time.time(), base_sha)
        ).lastrowid
        assert scan_id is not None  # an INSERT sets it
        return scan_id

    def finish_scan(self, scan_id: int, summary: dict[str, Any]) -> None:
        self._write(
            "UPDATE scans SET finished_at = ?, summary = ? WHERE id = ?",
            (time.time(), json.dumps(summary, sort_keys=True), scan_id),
        )

    def scan_count(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM scans").fetchone()[0])

    # --- rankings and regions -----------------------------------------------------------------------------

    def cached_ranking(self, base_sha: str, recipe: str) -> Ranking | None:
        row = self._conn.execute(
            "SELECT * FROM rankings WHERE base_sha = ? AND recipe = ?", (base_sha, recipe)
        ).fetchone()
        if row is None:
            return None
        regions = tuple(Region.from_dict(r) for r in json.loads(row["regions"]))
        return Ranking(base_sha, row["source"], recipe, row["note"], regions)

    def store_ranking(self, ranking: Ranking) -> None:
        self._write(
            "INSERT OR REPLACE INTO rankings VALUES (?, ?, ?, ?, ?, ?)",
            (
                ranking.base_sha,
                ranking.recipe,
                ranking.source,
                ranking.note,
                json.dumps([r.to_dict() for r in ranking.regions]),
                time.time(),
            ),
        )

    def see_regions(self, regions: Iterable[tuple[Region, str]], base_sha: str) -> None:
        """Record each (region, its PR branch) as seen now, on `base_sha`."""
        now = time.time()
        with self._conn:
            for region, branch in regions:
                self._conn.execute(
                    "INSERT INTO regions VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(target) DO UPDATE SET "
                    "branch = excluded.branch, path = excluded.path, last_seen = excluded.last_seen, "
                    "last_base = excluded.last_base",
                    (region.target, branch, region.path, now, now, base_sha),
                )

    def branches(self) -> dict[str, str]:
        """PR branch -> region, for every region ever seen (their PRs are synced even off the ranking)."""
        rows = self._conn.execute("SELECT branch, target FROM regions").fetchall()
        return {row["branch"]: row["target"] for row in rows}

    # --- runs, tasks, kernels -----------------------------------------------------------------------------

    def start_run(self, run_dir: Path, target: str, base_sha: str, purpose: str) -> None:
        self._write(
            "INSERT OR REPLACE INTO runs (run_dir, target, base_sha, purpose, status, started_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (str(run_dir), target, base_sha, purpose, RUNNING, time.time()),
        )

    def finish_run(
        self,
        run_dir: Path,
        status: str,
        *,
        error: str = "",
        kernel_hash: str = "",
        pr_action: str = "",
        pr_number: int | None = None,
    ) -> None:
        self._write(
            "UPDATE runs SET status = ?, error = ?, kernel_hash = ?, pr_action = ?, pr_number = ?, "
            "finished_at = ? WHERE run_dir = ?",
            (status, error, kernel_hash, pr_action, pr_number, time.time(), str(run_dir)),
        )

    def runs(self, target: str, base_sha: str | None = None) -> list[RunRecord]:
        """The region's runs (on `base_sha` when given), newest first."""
        sql, args = "SELECT * FROM runs WHERE target = ?", [target]
        if base_sha is not None:
            sql, args = sql + " AND base_sha = ?", [*args, base_sha]
        rows = self._conn.execute(sql + " ORDER BY started_at DESC", args).fetchall()
        return [RunRecord(**dict(row)) for row in rows]

    def record_task(self, run_dir: Path, target: str, entry: str, name: str, inputs: str) -> None:
        self._write(
            "INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?)", (str(run_dir), target, entry, name, inputs)
        )

    def record_kernel(self, kernel: KernelRecord) -> None:
        self._write(
            "INSERT OR REPLACE INTO kernels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                kernel.kernel_hash,
                kernel.target,
                kernel.run_dir,
                kernel.source_file,
                kernel.score,
                kernel.speedup,
                kernel.backend,
                kernel.base_sha,
                time.time(),
            ),
        )

    def kernel(self, kernel_hash: str) -> KernelRecord | None:
        row = self._conn.execute("SELECT * FROM kernels WHERE kernel_hash = ?", (kernel_hash,)).fetchone()
        return _kernel(row) if row is not None else None

    def best_kernel(self, target: str) -> KernelRecord | None:
        """The region's best-scoring kernel whose source is still on disk (the latest among equals)."""
        rows = self._conn.execute(
            "SELECT * FROM kernels WHERE target = ? ORDER BY score DESC, found_at DESC", (target,)
        ).fetchall()
        return next((_kernel(r) for r in rows if Path(r["source_file"]).is_file()), None)

    # --- pull requests ------------------------------------------------------------------------------------

    def sync_prs(self, branches: Iterable[str], prs: Iterable[PullRequest]) -> None:
        """The forge's answer for `branches` replaces what the ledger held for them (a PR the forge no
        longer lists is forgotten); `prs` are kernelbot's PRs on those branches and its other open ones."""
        now = time.time()
        with self._conn:
            self._conn.executemany("DELETE FROM prs WHERE branch = ?", [(b,) for b in branches])
            for pr in prs:
                marker = pr.marker
                if marker is None:
                    continue
                self._conn.execute(
                    "INSERT OR REPLACE INTO prs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        pr.number,
                        pr.head_branch,
                        pr.state.value,
                        marker.op,
                        marker.kernel_hash,
                        marker.base_sha,
                        marker.commit,
                        pr.head_sha,
                        pr.url,
                        now,
                    ),
                )

    def prs(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self._conn.execute("SELECT * FROM prs ORDER BY number")]


def _kernel(row: sqlite3.Row) -> KernelRecord:
    data = dict(row)
    data.pop("found_at", None)
    return KernelRecord(**data)
