"""The numbers behind the search's plots, computed from a SearchData: best score over time (overall and per
island), evaluations and failures per time bucket, failure reasons with when they were seen, and the
winner's line of descent. Pure functions of the store's rows; the plots and tables only draw them."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evolution.types import Program
from kernelbot.report.search_data import SearchData

FAILURE_KINDS = ("static", "compile", "correctness", "timing", "flagged")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_PROGRAM_ID = re.compile(r"\b[0-9a-f]{8,64}\b")  # program ids and shas
_BUCKETS = 24  # time buckets of the per-minute plots
_NICE_SECONDS = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400)


def counts_toward_best(program: Program | None) -> bool:
    """What the search's best is taken over (evolution.summary.best_program): correct, unflagged, kept."""
    r = program.result if program is not None else None
    return r is not None and r.correct and not r.hacks and not r.quarantined


def outcome_of(evaluation: Mapping[str, Any]) -> str:
    """'passed', the stage a failure stopped at, or 'flagged' (as evolution.store_read.stage_counts)."""
    if evaluation["hacks"]:
        return "flagged"
    return "passed" if evaluation["passed"] else str(evaluation["stage"])


@dataclass(frozen=True)
class Growth:
    """Best score against elapsed minutes (step curves), and evaluations done against elapsed minutes."""

    overall: list[tuple[float, float]]
    islands: dict[int, list[tuple[float, float]]]
    evaluations: list[tuple[float, int]]


def growth(data: SearchData) -> Growth:
    finished = {e["program_id"]: e["finished_at"] for e in data.evaluations}
    overall: list[tuple[float, float]] = []
    evaluations: list[tuple[float, int]] = [(0.0, 0)]
    best = None
    for i, ev in enumerate(data.evaluations, start=1):
        t = data.elapsed_s(ev["finished_at"]) / 60.0
        evaluations.append((t, i))
        program = data.by_id.get(ev["program_id"])
        if program is not None and counts_toward_best(program) and (best is None or program.score > best):
            best = program.score
            overall.append((t, best))
    # An island's best: the best program placed there so far (seeds land on every island, children on
    # their home island, migrants where they travel). A placement is written with its evaluation, and a
    # migration right after the evaluation that triggered it, so it takes the time of the latest one.
    islands: dict[int, list[tuple[float, float]]] = {i: [] for i in range(data.islands)}
    island_best: dict[int, float] = {}
    now = 0.0
    for row in data.placements:
        if row.kind != "migration" and row.program_id in finished:
            now = max(now, data.elapsed_s(finished[row.program_id]) / 60.0)
        program = data.by_id.get(row.program_id)
        if program is None or not counts_toward_best(program):
            continue
        if program.score > island_best.get(row.island, -math.inf):
            island_best[row.island] = program.score
            islands.setdefault(row.island, []).append((now, program.score))
    return Growth(overall, islands, evaluations)


@dataclass(frozen=True)
class Buckets:
    """Evaluations split into equal time buckets: the width, each bucket's start, and counts by outcome."""

    width_s: float
    starts_min: list[float]
    by_outcome: dict[str, list[int]] = field(default_factory=dict)

    @property
    def totals(self) -> list[int]:
        return [sum(col) for col in zip(*self.by_outcome.values(), strict=True)] if self.by_outcome else []

    def per_minute(self) -> list[float]:
        return [60.0 * n / self.width_s for n in self.totals]


def bucket_width(span_s: float) -> float:
    """A round width giving about _BUCKETS buckets over the run's span."""
    target = max(span_s, 1.0) / _BUCKETS
    return float(next((n for n in _NICE_SECONDS if n >= target), _NICE_SECONDS[-1]))


def buckets(data: SearchData) -> Buckets:
    times = [data.elapsed_s(e["finished_at"]) for e in data.evaluations]
    width = bucket_width(max(times, default=0.0))
    count = int(max(times, default=0.0) // width) + 1
    by_outcome: dict[str, list[int]] = {}
    for t, ev in zip(times, data.evaluations, strict=True):
        column = by_outcome.setdefault(outcome_of(ev), [0] * count)
        column[int(t // width)] += 1
    return Buckets(width, [i * width / 60.0 for i in range(count)], by_outcome)


@dataclass(frozen=True)
class Reason:
    """One kind of failure: its stage, the latest message of that shape, how often and when it was seen."""

    stage: str
    example: str
    count: int
    first_evaluation: int
    last_evaluation: int
    times_min: list[float]  # when each one happened (cumulative curves)


def reason_key(text: str) -> str:
    """A failure's first line with its numbers and program ids blanked, so that "error 3.1e-2 at (0, 5)"
    groups with its kin."""
    first = (text.strip().splitlines() or [""])[0]
    return _NUMBER.sub("#", _PROGRAM_ID.sub("<id>", first))[:160]


def failure_reasons(data: SearchData) -> list[Reason]:
    seen: dict[tuple[str, str], dict] = {}
    for i, ev in enumerate(data.evaluations, start=1):
        kind = outcome_of(ev)
        if kind == "passed":
            continue
        program = data.by_id.get(ev["program_id"])
        result = program.result if program else None
        text = ""
        if result is not None:
            text = result.reason or "; ".join(f"{h.kind}: {h.evidence}" for h in result.hacks)
        first_line = (text.strip().splitlines() or ["(no reason recorded)"])[0][:300]
        entry = seen.setdefault(
            (kind, reason_key(first_line)), {"first": i, "times": [], "example": first_line}
        )
        entry["example"], entry["last"] = first_line, i
        entry["times"].append(data.elapsed_s(ev["finished_at"]) / 60.0)
    rows = [
        Reason(kind, e["example"], len(e["times"]), e["first"], e["last"], e["times"])
        for (kind, _), e in seen.items()
    ]
    return sorted(rows, key=lambda r: (-r.count, r.first_evaluation))


@dataclass(frozen=True)
class OperatorMiss:
    """Operator calls of one kind that gave nothing to judge (duplicate, malformed, rejected, error)."""

    operator: str
    outcome: str
    example: str
    count: int


def operator_misses(data: SearchData) -> list[OperatorMiss]:
    seen: dict[tuple[str, str, str], list] = {}
    for m in data.mutations:
        if m.get("outcome") == "child":
            continue
        error = (str(m.get("error") or "").strip().splitlines() or ["(no reason recorded)"])[0][:300]
        key = (str(m.get("operator")), str(m.get("outcome")), reason_key(error))
        entry = seen.setdefault(key, [error, 0])
        entry[0], entry[1] = error, entry[1] + 1
    rows = [OperatorMiss(op, outcome, e[0], e[1]) for (op, outcome, _), e in seen.items()]
    return sorted(rows, key=lambda r: -r.count)


def outcome_counts(data: SearchData) -> Counter[str]:
    return Counter(outcome_of(e) for e in data.evaluations)


def lineage(data: SearchData, program: Program) -> list[Program]:
    """`program` and its parents back to the first candidate, oldest first (a cycle cannot occur in a store
    written by the controller, but a damaged one must not hang the report)."""
    chain, seen = [program], {program.id}
    while chain[-1].parent_id and chain[-1].parent_id not in seen:
        parent = data.by_id.get(chain[-1].parent_id)
        if parent is None:
            break
        chain.append(parent)
        seen.add(parent.id)
    return chain[::-1]


def latest_failures(data: SearchData, count: int) -> list[tuple[int, Program]]:
    """The last `count` failed or flagged evaluations, newest first, with their evaluation number."""
    out = []
    for i in range(len(data.evaluations), 0, -1):
        ev = data.evaluations[i - 1]
        program = data.by_id.get(ev["program_id"])
        if outcome_of(ev) != "passed" and program is not None and program.result is not None:
            out.append((i, program))
            if len(out) == count:
                break
    return out


def programs_by_operator(data: SearchData) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for p in data.programs:
        counts[p.operator] += 1
    return dict(sorted(counts.items()))
