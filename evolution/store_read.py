"""Reading a run store: the queries `kernelbot best`, `export`, the summary and a resumed controller need.

RunStore (evolution.store) adds creation, locking and the writing transactions on top of this class; a
read-only open (no lock) is a RunStore whose writing methods are simply never called.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluators.result import EvalResult, Hardware
from evolution.config import SearchConfig
from evolution.types import Program, TokenUsage


def new_program_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class MutationRecord:
    """One call of a mutation operator, whatever came of it."""

    phase: str  # "seed" | "evolve"
    iteration: int
    operator: str
    outcome: str  # "child" | "duplicate" | "malformed" | "rejected" | "error"
    parent_id: str | None = None
    island: int = 0
    mode: str = ""  # sampling mode that chose the parent
    inspiration_ids: tuple[str, ...] = ()
    prompt: str | None = None
    response: str | None = None
    error: str = ""
    usage: TokenUsage = field(default_factory=TokenUsage)
    duration_s: float = 0.0
    child: Program | None = None  # recorded as pending in the same transaction


@dataclass(frozen=True)
class PlacementRow:
    program_id: str
    island: int
    kind: str  # "bred" | "seed" | "migration"
    features: dict[str, float]
    cell: tuple[int, ...]
    placed: bool


class StoreReader:
    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    def meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    def config(self) -> SearchConfig:
        return SearchConfig.from_dict(json.loads(self.meta()["config"]), where=f"{self.path} (stored config)")

    def state(self, key: str, default: Any = None) -> Any:
        row = self._conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def programs(self, status: str | None = None) -> list[Program]:
        """Programs in creation order, evaluated ones with their EvalResult and home-island features."""
        sql = (
            "SELECT p.id, p.source, p.sha, p.parent_id, p.operator, p.island, p.iteration, p.created_at,"
            " e.result_json FROM programs p LEFT JOIN evaluations e ON e.program_id = p.id"
        )
        args: tuple[Any, ...] = ()
        if status:
            sql += " WHERE p.status = ?"
            args = (status,)
        features = self._home_features()
        out = []
        for pid, src, sha, parent, op, isl, it, created, rj in self._conn.execute(
            sql + " ORDER BY p.rowid", args
        ):
            result = EvalResult.from_json(rj) if rj else None
            out.append(Program(pid, src, sha, parent, op, isl, it, result, features.get(pid, {}), created))
        return out

    def program(self, program_id: str) -> Program | None:
        return next((p for p in self.programs() if p.id == program_id), None)

    def _home_features(self) -> dict[str, dict[str, float]]:
        rows = self._conn.execute(
            "SELECT pl.program_id, pl.features FROM placements pl JOIN programs p ON p.id = pl.program_id"
            " WHERE pl.island = p.island ORDER BY pl.seq DESC"
        )
        return {pid: json.loads(f) for pid, f in rows}

    def placements(self) -> list[PlacementRow]:
        rows = self._conn.execute(
            "SELECT program_id, island, kind, features, cell, placed FROM placements ORDER BY seq"
        )
        return [
            PlacementRow(p, i, k, json.loads(f), tuple(json.loads(cl)), bool(pl))
            for p, i, k, f, cl, pl in rows
        ]

    def known_shas(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT sha FROM programs")}

    def island_generations(self) -> dict[int, int]:
        return dict(self._conn.execute("SELECT id, generation FROM islands").fetchall())

    def mutation_count(self, phase: str = "evolve") -> int:
        return int(
            self._conn.execute("SELECT COUNT(*) FROM mutations WHERE phase = ?", (phase,)).fetchone()[0]
        )

    def evaluation_count(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0])

    def token_usage(self) -> TokenUsage:
        row = self._conn.execute(
            "SELECT COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),"
            " COALESCE(SUM(cost_usd), 0)"
            " FROM mutations"
        ).fetchone()
        return TokenUsage(int(row[0]), int(row[1]), float(row[2]))

    def usage_by_operator(self) -> dict[str, tuple[int, TokenUsage]]:
        """Per operator that spent tokens (the LLM ones, "llm:<model>"): (requests answered, usage)."""
        rows = self._conn.execute(
            "SELECT operator, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost_usd)"
            " FROM mutations WHERE prompt_tokens > 0 OR completion_tokens > 0 OR cost_usd > 0"
            " GROUP BY operator ORDER BY operator"
        )
        return {op: (int(n), TokenUsage(int(p), int(c), float(usd))) for op, n, p, c, usd in rows}

    def latest_hardware(self) -> Hardware | None:
        """The hardware the latest evaluation that names its backend ran on."""
        for program in reversed(self.programs(status="evaluated")):
            if program.result is not None and program.result.hardware.backend:
                return program.result.hardware
        return None

    def evaluations(self) -> list[dict[str, Any]]:
        """Evaluation rows in completion order (growth curve, progress), without the full result."""
        cols = (
            "seq",
            "program_id",
            "sha",
            "stage",
            "passed",
            "correct",
            "score",
            "speedup",
            "hacks",
            "worker",
            "attempts",
            "finished_at",
        )
        rows = self._conn.execute(f"SELECT {', '.join(cols)} FROM evaluations ORDER BY seq")
        return [dict(zip(cols, r, strict=True)) for r in rows]

    def mutations(self) -> list[dict[str, Any]]:
        cur = self._conn.execute("SELECT * FROM mutations ORDER BY seq")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur]

    def stage_counts(self) -> dict[str, int]:
        """Evaluations by outcome: 'passed', the stage a failure stopped at, or 'flagged' (hack findings)."""
        rows = self._conn.execute(
            "SELECT CASE WHEN hacks > 0 THEN 'flagged' WHEN passed THEN 'passed' ELSE stage END, COUNT(*)"
            " FROM evaluations GROUP BY 1"
        )
        return dict(rows.fetchall())
