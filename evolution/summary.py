"""What a run found, read from its store: the winning program with per-case speedups in both regimes, and
the growth curve (best score against evaluations) written to the run directory as CSV and JSON."""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evaluators.result import EvalResult
from evaluators.sandbox import sandbox_record
from evolution.compile_check import COMPILE_STATE
from evolution.final_comparison import FINAL_STATE, compared_winner, deciding_comparison
from evolution.store import RunStore
from evolution.types import Program
from evolution.winner import run_winner

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
    """The program the run ships: its fittest correct, unflagged, unquarantined program, or a much shorter
    one tied with it on every case (evolution.winner), or a challenger faster than that one timed side by
    side with it (evolution.final_comparison); None when nothing passed."""
    programs = store.programs(status="evaluated")
    return compared_winner(run_winner(programs), programs, store.state(FINAL_STATE))


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


@dataclass(frozen=True)
class FailureReason:
    stage: str
    reason: str  # the first line of the evaluator's reason, at most 200 characters
    count: int


@dataclass(frozen=True)
class ModelUsage:
    requests: int
    prompt: int
    completion: int
    cost_usd: float


@dataclass(frozen=True)
class TokenSpend:
    """What the run's LLM endpoints cost, in total and per model."""

    prompt: int
    completion: int
    cost_usd: float
    by_model: dict[str, ModelUsage]

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "completion": self.completion,
            "cost_usd": self.cost_usd,
            "by_model": {model: asdict(usage) for model, usage in self.by_model.items()},
        }


@dataclass(frozen=True)
class BestSummary:
    """The winner (program_summary) and the file its source was written to."""

    program_id: str
    sha: str
    operator: str
    parent_id: str | None
    island: int
    score: float
    speedup: float | None
    speedup_ci: list[float] | None
    regime: str
    backend: str
    device: str
    stage: str
    passed: bool
    cases: list[dict[str, Any]]  # case_table: per case, errors and per-regime timings
    candidate_file: str


@dataclass(frozen=True)
class SearchSummary:
    """What a search came to: the data summary.json holds (`to_dict` is that file's layout)."""

    task: str | None
    task_dir: str | None
    run_dir: str
    evaluations: int
    iterations: int
    outcomes: dict[str, int]  # evaluations by outcome (StoreReader.stage_counts)
    failure_reasons: tuple[FailureReason, ...]
    tokens: TokenSpend
    growth_csv: str
    growth_json: str
    sandbox: str  # the OS box that judged the candidates, or why none did
    best: BestSummary | None
    stop_reason: str | None = None  # None: not said (a summary read back without its stop)
    elapsed_s: float | None = None  # None: not measured (a finished search read back)
    # The final comparison that decided `best` (evolution.final_comparison.record: the pick, the winner, each
    # challenger's per-case speedup against the pick side by side); None where none ran or it is stale.
    final_comparison: dict[str, Any] | None = None
    # The run's best before the final crossover timed against torch.compile side by side
    # (evolution.compile_check.record: a final comparison's duel, per-case speedups over compile, and the
    # cases behind); None where none ran.
    compile_check: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON layout of summary.json and of `kernelbot evolve --json`."""
        said: dict[str, Any] = {}
        if self.stop_reason is not None:
            said["stop_reason"] = self.stop_reason
        if self.elapsed_s is not None:
            said["elapsed_s"] = self.elapsed_s
        return {
            "task": self.task,
            "task_dir": self.task_dir,
            "run_dir": self.run_dir,
            **said,
            "evaluations": self.evaluations,
            "iterations": self.iterations,
            "outcomes": self.outcomes,
            "failure_reasons": [asdict(r) for r in self.failure_reasons],
            "tokens": self.tokens.to_dict(),
            "growth": {"csv": self.growth_csv, "json": self.growth_json},
            "sandbox": self.sandbox,
            "best": None if self.best is None else asdict(self.best),
            "final_comparison": self.final_comparison,
            "compile_check": self.compile_check,
        }


def run_summary(
    store: RunStore, run_dir: Path, *, stop_reason: str | None = None, elapsed_s: float | None = None
) -> SearchSummary:
    """What the run found; also writes best.py, growth.* and summary.json (its `to_dict`) to run_dir."""
    meta = store.meta()
    best = best_program(store)
    csv_path, json_path = write_growth(store, run_dir)
    usage = store.token_usage()
    winner = None
    if best is not None:
        best_path = run_dir / BEST_FILE
        best_path.write_text(best.source)
        winner = BestSummary(**program_summary(best), candidate_file=str(best_path))
    summary = SearchSummary(
        task=meta.get("task_name"),
        task_dir=meta.get("task_dir"),
        run_dir=str(run_dir),
        stop_reason=stop_reason,
        elapsed_s=elapsed_s,
        evaluations=store.evaluation_count(),
        iterations=store.mutation_count("evolve"),
        outcomes=store.stage_counts(),
        failure_reasons=tuple(FailureReason(**r) for r in failure_reasons(store)),
        tokens=TokenSpend(
            prompt=usage.prompt_tokens,
            completion=usage.completion_tokens,
            cost_usd=usage.cost_usd,
            by_model={model: ModelUsage(**u) for model, u in usage_by_model(store).items()},
        ),
        growth_csv=str(csv_path),
        growth_json=str(json_path),
        sandbox=sandbox_record(),
        best=winner,
        final_comparison=deciding_comparison(best, store.state(FINAL_STATE)),
        compile_check=store.state(COMPILE_STATE),
    )
    (run_dir / SUMMARY_JSON).write_text(json.dumps(summary.to_dict(), indent=2, default=str) + "\n")
    return summary
