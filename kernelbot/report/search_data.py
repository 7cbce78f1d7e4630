"""A search as the report sees it: everything read once from the run's store (opened read-only, no lock),
so that the sections compute from plain values and a live or killed run reads the same way as a finished one.

The store is the only source: it already holds every text redacted (evolution.redact), and nothing here looks
at environment variables.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolution.errors import RunStoreError
from evolution.runlock import LOCK_FILE
from evolution.store import STORE_FILE, RunStore
from evolution.store_read import PlacementRow
from evolution.summary import best_program
from evolution.types import Program


@dataclass(frozen=True)
class RunStatus:
    """How the search stands: finished (with the stop rule's reason), running, or stopped unfinished."""

    kind: str  # "finished" | "running" | "stopped"
    detail: str

    @property
    def finished(self) -> bool:
        return self.kind == "finished"


@dataclass(frozen=True)
class SearchData:
    run_dir: Path
    meta: dict[str, str]
    config: Mapping[str, Any]  # the search's config as the store keeps it (evolution.config, as JSON)
    programs: list[Program]  # creation order; evaluated ones carry their EvalResult
    # Store rows as evolution.store_read.StoreReader returns them (column -> value), read only here.
    evaluations: Sequence[Mapping[str, Any]]  # completion order (StoreReader.evaluations)
    mutations: Sequence[Mapping[str, Any]]  # every operator call, in order (StoreReader.mutations)
    placements: list[PlacementRow]  # the archive's log, in order
    islands: int
    status: RunStatus
    best: Program | None
    pending: int  # programs recorded but not judged (being judged when a run was killed)
    by_id: dict[str, Program] = field(default_factory=dict)

    @property
    def task(self) -> str:
        return self.meta.get("task_name", "?")

    @property
    def regime(self) -> str:
        return self.meta.get("regime", "")

    @property
    def created_at(self) -> float:
        try:
            return float(self.meta.get("created_at", "0"))
        except ValueError:
            return 0.0

    def elapsed_s(self, t: float) -> float:
        return max(0.0, t - self.created_at)

    def mutation_of(self, program_id: str) -> Mapping[str, Any] | None:
        """The operator call that produced `program_id` (None for seed files)."""
        return next((m for m in self.mutations if m.get("child_id") == program_id), None)

    def models(self) -> list[str]:
        """The LLMs the run was configured with (model names only: endpoints stay out of the report)."""
        llm = (self.config.get("mutation") or {}).get("llm") or []
        return [str(e.get("model", "")) for e in llm if isinstance(e, dict)]


@dataclass(frozen=True)
class NoSearch:
    """Why there is no search to show (the sections print this)."""

    reason: str


EVOLVE_RESUME = "`kernelbot evolve --resume` continues it"


def load_search(run_dir: Path, resume_hint: str = EVOLVE_RESUME) -> SearchData | NoSearch:
    """The search in `run_dir`; `resume_hint` says how a stopped one is continued."""
    if not (run_dir / STORE_FILE).is_file():
        return NoSearch(f"there is no search store ({run_dir / STORE_FILE}): the search has not started")
    try:
        with RunStore.open(run_dir, readonly=True) as store:
            meta = store.meta()
            programs = store.programs()
            data = SearchData(
                run_dir=run_dir,
                meta=meta,
                config=_config(meta),
                programs=programs,
                evaluations=store.evaluations(),
                mutations=store.mutations(),
                placements=store.placements(),
                islands=len(store.island_generations()) or _configured_islands(meta),
                status=_status(run_dir, store.state("finished"), resume_hint),
                best=best_program(store),
                pending=sum(1 for p in programs if p.result is None),
                by_id={p.id: p for p in programs},
            )
    except RunStoreError as exc:
        return NoSearch(str(exc))
    except sqlite3.DatabaseError as exc:  # a damaged store: readable enough to open, not to read
        return NoSearch(f"{run_dir / STORE_FILE} cannot be read: {exc}")
    return data


def _config(meta: Mapping[str, str]) -> Mapping[str, Any]:
    try:
        value = json.loads(meta.get("config", "{}"))
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _configured_islands(meta: dict[str, str]) -> int:
    islands = (_config(meta).get("archive") or {}).get("islands")
    return islands if isinstance(islands, int) and islands > 0 else 1


def _status(run_dir: Path, finished: Any, resume_hint: str) -> RunStatus:
    if finished:
        return RunStatus("finished", str(finished))
    pid = _lock_holder(run_dir)
    if pid is not None:
        return RunStatus("running", f"a kernelbot process (pid {pid}) is driving this search now")
    return RunStatus(
        "stopped", f"the search stopped without finishing (killed, interrupted or crashed); {resume_hint}"
    )


def _lock_holder(run_dir: Path) -> int | None:
    """The pid in RUN/run.lock when that process is alive (a finished run removes the file; a killed one
    leaves it with a dead pid). Read only: taking the lock, even briefly, could refuse a resuming run."""
    try:
        pid = int((run_dir / LOCK_FILE).read_text().strip() or "0")
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, owned by someone else
    return pid
