"""What a run found, read from its store: the winning program with per-case speedups in both regimes, and
the growth curve (best score against evaluations) written to the run directory as CSV and JSON."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

from evaluators.result import EvalResult
from evaluators.sandbox import sandbox_record
from evolution.grid import fitness
from evolution.store import RunStore
from evolution.types import Program

GROWTH_CSV = "growth.csv"
GROWTH_JSON = "growth.json"
BEST_FILE = "best.py"
SUMMARY_JSON = "summary.json"
GROWTH_FIELDS = (
    "evaluation",
    "elapsed_s",
    "program_id",
    "operator",
    "stage",
    "score",
    "best_score",
    "best_id",
)


def best_program(store: RunStore) -> Program | None:
    """The fittest correct, unflagged, unquarantined program of the run (None when nothing passed)."""
    best: Program | None = None
    for p in store.programs(status="evaluated"):
        if p.result is None or not p.correct or p.result.quarantined:
            continue
        if best is None or fitness(p) > fitness(best):
            best = p
    return best


def growth_curve(store: RunStore) -> list[dict[str, Any]]:
    started = float(store.meta().get("created_at", 0.0))
    operators = {p.id: p.operator for p in store.programs()}
    rows, best_score, best_id = [], 0.0, None
    for i, ev in enumerate(store.evaluations(), start=1):
        ok = ev["correct"] and ev["hacks"] == 0
        if ok and (best_id is None or ev["score"] > best_score):
            best_score, best_id = float(ev["score"]), ev["program_id"]
        rows.append(
            {
                "evaluation": i,
                "elapsed_s": round(ev["finished_at"] - started, 3),
                "program_id": ev["program_id"],
                "operator": operators.get(ev["program_id"], ""),
                "stage": "passed" if ev["passed"] else ev["stage"],
                "score": float(ev["score"]),
                "best_score": best_score,
                "best_id": best_id,
            }
        )
    return rows


def write_growth(store: RunStore, run_dir: Path) -> tuple[Path, Path]:
    rows = growth_curve(store)
    csv_path, json_path = run_dir / GROWTH_CSV, run_dir / GROWTH_JSON
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=GROWTH_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    json_path.write_text(json.dumps(rows, indent=1) + "\n")
    return csv_path, json_path


def case_table(result: EvalResult) -> list[dict[str, Any]]:
    """Per case: errors and, per regime, speedup with CI, the lower bound a claim may state (`claim_low`:
    the CI's lower end less the cross-process margin; None with too few pairs), and both medians."""
    cases = []
    for c in result.cases:
        row: dict[str, Any] = {
            "name": c.name,
            "params": c.params,
            "passed": c.passed,
            "hidden": c.hidden,
            "max_abs_error": c.max_abs_error,
            "max_rel_error": c.max_rel_error,
            "skipped": c.skipped,
        }
        for regime in ("graph", "wall"):
            t = c.timings.get(regime)
            row[regime] = (
                None
                if t is None
                else {
                    "speedup": t.speedup,
                    "ci": [t.ci_low, t.ci_high],
                    "claim_low": t.claim_low,
                    "reference_us": t.reference.median_us,
                    "candidate_us": t.candidate.median_us,
                    "candidate_cv": t.candidate.cv,
                }
            )
        cases.append(row)
    return cases


def program_summary(program: Program) -> dict[str, Any]:
    r = program.result
    assert r is not None
    return {
        "program_id": program.id,
        "sha": program.sha,
        "operator": program.operator,
        "parent_id": program.parent_id,
        "island": program.island,
        "score": r.score,
        "speedup": r.speedup,
        "speedup_ci": list(r.speedup_ci) if r.speedup_ci else None,
        "regime": r.regime,
        "backend": r.backend,
        "device": r.hardware.device,
        "stage": r.stage.value,
        "passed": r.passed,
        "cases": case_table(r),
    }


def failure_reasons(store: RunStore, top: int = 8) -> list[dict[str, Any]]:
    """The most common reasons candidates failed, by stage (what a user fixes first, or a tuner avoids)."""
    counts: Counter[tuple[str, str]] = Counter()
    for p in store.programs(status="evaluated"):
        r = p.result
        if r is None or r.passed:
            continue
        first_line = (r.reason.strip().splitlines() or [""])[0]
        counts[(r.stage.value, first_line[:200])] += 1
    return [{"stage": stage, "reason": reason, "count": n} for (stage, reason), n in counts.most_common(top)]


def usage_by_model(store: RunStore) -> dict[str, dict[str, Any]]:
    """Tokens and dollars per LLM model of the run (operators "llm:<model>"; others spend none)."""
    out: dict[str, dict[str, Any]] = {}
    for operator, (requests, usage) in store.usage_by_operator().items():
        model = operator.split(":", 1)[1] if operator.startswith("llm:") else operator
        out[model] = {
            "requests": requests,
            "prompt": usage.prompt_tokens,
            "completion": usage.completion_tokens,
            "cost_usd": usage.cost_usd,
        }
    return out


def run_summary(store: RunStore, run_dir: Path, **extra: Any) -> dict[str, Any]:
    """The --json summary of `kernelbot evolve`; also writes best.py, growth.* and summary.json to run_dir."""
    meta = store.meta()
    best = best_program(store)
    csv_path, json_path = write_growth(store, run_dir)
    usage = store.token_usage()
    summary: dict[str, Any] = {
        "task": meta.get("task_name"),
        "task_dir": meta.get("task_dir"),
        "run_dir": str(run_dir),
        **extra,
        "evaluations": store.evaluation_count(),
        "iterations": store.mutation_count("evolve"),
        "outcomes": store.stage_counts(),
        "failure_reasons": failure_reasons(store),
        "tokens": {
            "prompt": usage.prompt_tokens,
            "completion": usage.completion_tokens,
            "cost_usd": usage.cost_usd,
            "by_model": usage_by_model(store),
        },
        "growth": {"csv": str(csv_path), "json": str(json_path)},
        "sandbox": sandbox_record(),  # the OS box that judged the candidates, or why none did
        "best": None,
    }
    if best is not None:
        best_path = run_dir / BEST_FILE
        best_path.write_text(best.source)
        summary["best"] = {**program_summary(best), "candidate_file": str(best_path)}
    (run_dir / SUMMARY_JSON).write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary
