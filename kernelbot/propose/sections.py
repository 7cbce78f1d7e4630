"""The sections of a PR body, one function each, turning Evidence into what a template shows.

Each function returns plain data (strings already formatted, rows for tables, flags for the template's
`if`s) and never does arithmetic: every number comes out of the Evidence field it is stored in, only rounded
for display. Whether something is "faster" is the stored verdict of the confirmation's stop rule (its bound
over fresh processes above 1), never a comparison made here.
`pr_templates/<profile>.md.j2` arranges the sections under the target repo's own headings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kernelbot.propose.evidence import CaseBench, ColumnFigure, Evidence, TestCounts
from kernelbot.propose.section_types import (
    AccuracyRow,
    AccuracySection,
    ColumnRow,
    ControlsSection,
    E2ESection,
    E2ESide,
    EnvironmentSection,
    FigureRow,
    MicrobenchSection,
    ModificationsSection,
    MotivationSection,
    ProvenanceSection,
    ReproduceSection,
    SectionData,
    TestsSection,
)

# Why a regime was timed: the task's regime is an extraction option (graph unless told otherwise), not where
# the engine was seen to run the function, so the words say it is assumed.
REGIME_WORDS = {
    "graph": (
        "timed as replays of a captured CUDA graph (GPU time); that the engine runs it inside a captured "
        "CUDA graph is assumed, not observed"
    ),
    "wall": (
        "timed eagerly (launch-inclusive wall time); that the engine runs it eagerly is assumed, not observed"
    ),
}


# --- formatting (display only: rounding, never arithmetic) -------------------------------------------------


def fmt_x(value: float) -> str:
    return f"{value:.2f}"


def fmt_bound(value: float) -> str:
    """A claimable lower bound: one more digit than a speedup, so a bound just under 1 never reads 1.00."""
    return f"{value:.3f}"


def fmt_us(value: float) -> str:
    return f"{value:.1f}"


def fmt_err(value: float | None) -> str:
    return "–" if value is None else f"{value:.1e}"


def fmt_pct(value: float) -> str:
    return f"{value:.1f}"


def fmt_signed_pct(value: float) -> str:
    return f"{value:+.1f}"


def fmt_metric(value: float) -> str:
    return f"{value:.2f}"


def fmt_s(value: float) -> str:
    return f"{value:.0f}"


def fmt_usd(value: float) -> str:
    return f"{value:.4f}"


# The formats above, for tests that check every number in a body against evidence.json.
NUMBER_FORMATS: tuple[Callable[[float], str], ...] = (
    fmt_x,
    fmt_bound,
    fmt_us,
    fmt_err,
    fmt_pct,
    fmt_signed_pct,
    fmt_metric,
    fmt_s,
    fmt_usd,
)


def cell(text: object) -> str:
    """A markdown table cell: pipes escaped, no line breaks."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def params_text(params: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items() if k != "name")


def code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"``{text}``"


# --- sections ----------------------------------------------------------------------------------------------


def motivation(e: Evidence) -> MotivationSection:
    share = e.motivation.share_of_time_pct
    return {
        "function": e.op.function,
        "share": None if share is None else f"{fmt_pct(share)} %",
        "source": e.motivation.source,
        "regime": e.microbenchmarks.regime,
        "regime_words": REGIME_WORDS.get(e.microbenchmarks.regime, e.microbenchmarks.regime),
    }


def modifications(e: Evidence) -> ModificationsSection:
    m = e.modifications
    others = [f for f in m.files if f not in (m.kernel_module, m.test_file, m.bench_file)]
    return {
        "function": e.op.function,
        "kernel_module": m.kernel_module,
        "test_file": m.test_file,
        "changed": others,
        "envelope": list(m.envelope),
        "formatter": m.formatter,
        "bench_file": m.bench_file,
        "slot": m.slot,
        "selection": m.selection,
        "in_compile_region": m.in_compile_region,
    }


def accuracy(e: Evidence) -> AccuracySection:
    a = e.accuracy
    rows: list[AccuracyRow] = []
    for c in a.cases:
        verdict = f"skipped: {c.skipped}" if c.skipped else ("pass" if c.passed else "FAIL")
        if c.atol is None or c.rtol is None:
            tolerance = "–"
        else:
            tolerance = f"atol {fmt_err(c.atol)}, rtol {fmt_err(c.rtol)}"
        rows.append(
            {
                "name": cell(c.name + (" (hidden)" if c.hidden else "")),
                "params": cell(params_text(c.params)),
                "dtype": cell(c.dtype or "–"),
                "max_abs": fmt_err(c.max_abs_error),
                "max_rel": fmt_err(c.max_rel_error),
                "tolerance": tolerance,
                "verdict": verdict,
            }
        )
    return {
        "rows": rows,
        "seeds_per_case": a.seeds_per_case,
        "hidden_cases": a.hidden_cases,
        "dynamic_keys": ", ".join(a.dynamic_keys),
        "reference_precision": a.reference_precision,
    }


COLUMN_WORDS = {"eager": "eager", "compile": "torch.compile", "current": "current path"}
VERDICT_WORDS = {"faster": "faster", "not faster": "not faster", "not shown": "no claim"}


def _figure_row(case: CaseBench, f: ColumnFigure) -> FigureRow:
    return {
        "name": cell(case.name),
        "params": cell(params_text(case.params)),
        "regime": case.regime,
        "column": COLUMN_WORDS.get(f.column, f.column),
        "baseline_us": "–" if f.baseline_us is None else fmt_us(f.baseline_us),
        "kernel_us": "–" if f.kernel_us is None else fmt_us(f.kernel_us),
        "pooled": f"{fmt_x(f.pooled)}×",
        "bound": "–" if f.bound is None else f"≥ {fmt_bound(f.bound)}×",
        "processes": f.processes,
        "cv": "–" if f.cv_pct is None else f"{fmt_pct(f.cv_pct)} %",
        "verdict": VERDICT_WORDS.get(f.verdict, f.verdict),
    }


def microbenchmarks(e: Evidence) -> MicrobenchSection:
    """The confirmation's figures: per case, regime and baseline column (eager, torch.compile, the engine's
    current path), the pooled speedup over fresh processes, its bound, the process count and their spread;
    a column without figures says why. Nothing here comes from the search."""
    mb = e.microbenchmarks
    columns: list[ColumnRow] = [
        {
            "name": COLUMN_WORDS.get(c.name, c.name),
            "label": c.label,
            "available": c.available,
            "reason": c.reason,
            "processes": c.processes,
        }
        for c in mb.columns
    ]
    if not mb.measured:
        return {"measured": False, "reason": mb.reason, "regime": mb.regime, "columns": columns}
    rows = [_figure_row(case, f) for case in mb.cases for f in case.figures]
    return {
        "measured": True,
        "regime": mb.regime,
        "columns": columns,
        "rows": rows,
        "confidence": fmt_pct(mb.confidence_pct),
        "min_processes": mb.min_processes,
        "max_processes": mb.max_processes,
        "spread_floor": ", ".join(
            f"{fmt_pct(pct)} % ({regime} regime)" for regime, pct in mb.spread_floor_pct
        ),
        "any_claimed": any(f.claimed for case in mb.cases for f in case.figures),
        "beats_current_path": mb.beats_current_path,
        "not_faster_than_current": list(mb.not_faster_than_current),
    }


def tests(e: Evidence) -> TestsSection:
    t = e.tests
    if not t.ran:
        return {"ran": False, "reason": t.reason}

    def counts(c: TestCounts | None) -> str:
        return "did not exist" if c is None else f"{c.passed} passed, {c.failed} failed, {c.skipped} skipped"

    return {
        "ran": True,
        "command": code(" ".join(t.command)),
        "files": list(t.files),
        "before": counts(t.before),
        "after": counts(t.after),
        "new_failures": list(t.new_failures),
        "preexisting_failures": list(t.preexisting_failures),
        "fixed": list(t.fixed),
    }


def e2e(e: Evidence) -> E2ESection:
    b = e.e2e
    if not b.measured:
        return {"measured": False, "reason": b.reason}
    unit = f" {b.unit}" if b.unit else ""

    def side(mean: float | None, cv: float | None, samples: tuple[float, ...]) -> E2ESide:
        return {
            "mean": "–" if mean is None else f"{fmt_metric(mean)}{unit}",
            "cv": "–" if cv is None else f"{fmt_pct(cv)} %",
            "samples": ", ".join(fmt_metric(v) for v in samples),
        }

    delta = None if b.delta_pct is None else f"{fmt_signed_pct(b.delta_pct)} %"
    ci = None
    if b.ci_low_pct is not None and b.ci_high_pct is not None:
        ci = f"[{fmt_signed_pct(b.ci_low_pct)} %, {fmt_signed_pct(b.ci_high_pct)} %]"
    return {
        "measured": True,
        "command": code(" ".join(b.command)),
        "metric": b.metric,
        "direction": "higher is better" if b.higher_is_better else "lower is better",
        "before": side(b.before_mean, b.before_cv_pct, b.before),
        "after": side(b.after_mean, b.after_cv_pct, b.after),
        "delta": delta,
        "ci": ci,
        "claimed": b.claimed,
        "regressed": b.regressed,
        "confidence": b.confidence_pct,
        "runs": b.runs,
        "inconclusive": b.inconclusive,
        "stopped_by": b.stopped_by or "the cap",
        "target": None if b.target_half_width_pct is None else f"{fmt_pct(b.target_half_width_pct)} %",
    }


def environment(e: Evidence) -> EnvironmentSection:
    env = e.environment
    rows = [
        ("Device", env.gpu),
        ("Driver", env.driver),
        ("CUDA / HIP runtime", env.runtime),
        ("PyTorch", env.torch),
        ("Triton", env.triton),
        ("Python", env.python),
        ("Evaluator backend", env.backend),
        ("kernelbot", env.kernelbot),
    ]
    return {"rows": [(label, cell(value)) for label, value in rows if value]}


def reproduce(e: Evidence) -> ReproduceSection:
    return {
        "command": e.reproduce,
        "repo": e.repo.url,
        "base_sha": e.repo.base_sha,
        "base_short": e.repo.base_sha[:12],
        "branch": e.repo.branch,
        "base_ref": e.repo.base_ref,
    }


def provenance(e: Evidence) -> ProvenanceSection:
    p = e.provenance
    return {
        "operators": ", ".join(f"{name}: {count}" for name, count in p.operators.items()) or "–",
        "best_operator": p.best_operator,
        "models": ", ".join(p.models) if p.models else "none (no LLM was configured)",
        "iterations": p.iterations,
        "evaluations": p.evaluations,
        "tokens": f"{p.prompt_tokens} prompt + {p.completion_tokens} completion",
        "cost": f"${fmt_usd(p.cost_usd)}",
        "search_s": None if p.search_s is None else f"{fmt_s(p.search_s)} s",
        "kernel_hash": e.op.kernel_hash,
    }


def controls(e: Evidence) -> ControlsSection:
    return {
        "kernel_short": e.op.kernel_hash[:12],
        "lines": [
            "Close this PR without merging and kernelbot will never propose this kernel again: it reads the "
            "closed PR's hidden marker before every proposal.",
            "While this PR is open kernelbot opens no other PR in this repository; a better kernel for the "
            "same function updates this PR in place (new commit, refreshed description) instead.",
            "Comments and reviews go to the contributor who ran kernelbot; the bot itself never merges, "
            "labels or pings anyone.",
        ],
        "human_steps": list(e.human_steps),
    }


SECTIONS: dict[str, Callable[[Evidence], SectionData]] = {
    "motivation": motivation,
    "modifications": modifications,
    "accuracy": accuracy,
    "microbenchmarks": microbenchmarks,
    "tests": tests,
    "e2e": e2e,
    "environment": environment,
    "reproduce": reproduce,
    "provenance": provenance,
    "controls": controls,
}


def all_sections(e: Evidence) -> dict[str, SectionData]:
    return {name: build(e) for name, build in SECTIONS.items()}
