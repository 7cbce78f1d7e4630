"""The summary of bench/stability.py, kept pure so it is tested on CPU: per kernel and timing method, the
cross-process coefficient of variation of the candidate's reported time and of its speedup over the reference
(`summarize`), checked against the acceptance targets (`target_for`), and the markdown tables that go into
stability.md and docs/benchmarks.md (`markdown`). The driver that runs the fresh processes and collects
their records stays in bench/stability.py.

Methods: `kernelbot-graph` (the graph regime, scored), `kernelbot-wall` (the wall regime as a wall task
scores it), `kernelbot-wall-look` (the wall regime's short look beside a graph task's scored regime), and
triton.testing's `do_bench` and `do_bench_cudagraph`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

METHODS = ("kernelbot-graph", "kernelbot-wall", "kernelbot-wall-look", "do_bench", "do_bench_cudagraph")
TARGET_CV = 0.0025  # the acceptance target for the graph regime: 0.25 %, of time and speedup
# The wall regime's target, on the speedup's CV: 1 % where the host's launch cost dominates (tiny, mid),
# 0.25 % where the GPU's time does (large).
WALL_TARGET_CV = {"tiny": 0.01, "mid": 0.01, "large": 0.0025}


def target_for(kernel: str, method: str) -> float | None:
    """The acceptance target of a method's cross-process CV on `kernel` (None: reported, not judged)."""
    if method == "kernelbot-graph":
        return TARGET_CV
    if method == "kernelbot-wall":
        return WALL_TARGET_CV.get(kernel)
    return None


def cross_cv(values: list[float]) -> float:
    """Cross-process coefficient of variation: sample stdev over mean."""
    if len(values) < 2:
        return math.nan
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else math.inf


def _mean_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [float(m[key]) for m in runs if isinstance(m.get(key), (int, float))]
    return statistics.fmean(values) if values else None


@dataclass
class MethodSummary:
    kernel: str
    method: str
    evaluations: int
    mean_time_us: float
    cv_time: float
    mean_speedup: float
    cv_speedup: float
    mean_stage_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    target: float | None = None
    mean_half_width: float | None = None  # the per-process speedup interval's half-width, relative
    mean_claim_low: float | None = None  # the per-process lower bound a claim may state

    @property
    def meets_target(self) -> bool:
        """Graph: both CVs within the target; wall: the speedup's; a method without a target never does."""
        if self.method == "kernelbot-graph":
            return self.cv_time <= TARGET_CV and self.cv_speedup <= TARGET_CV
        return self.target is not None and self.cv_speedup <= self.target


def summarize(records: list[dict[str, Any]]) -> list[MethodSummary]:
    rows = []
    kernels = list(dict.fromkeys(r["kernel"] for r in records))
    for kernel in kernels:
        mine = [r for r in records if r["kernel"] == kernel]
        for method in METHODS:
            runs = [r["methods"][method] for r in mine if method in r.get("methods", {})]
            if not runs:
                continue
            times = [m["candidate_us"] for m in runs]
            speedups = [m["speedup"] for m in runs]
            stage = [r["timing_stage_s"] for r in mine if "timing_stage_s" in r]
            rows.append(
                MethodSummary(
                    kernel=kernel,
                    method=method,
                    evaluations=len(runs),
                    mean_time_us=statistics.fmean(times),
                    cv_time=cross_cv(times),
                    mean_speedup=statistics.fmean(speedups),
                    cv_speedup=cross_cv(speedups),
                    mean_stage_s=statistics.fmean(stage)
                    if method.startswith("kernelbot") and stage
                    else None,
                    target=target_for(kernel, method),
                    mean_half_width=_mean_of(runs, "half_width"),
                    mean_claim_low=_mean_of(runs, "claim_low"),
                )
            )
    return rows


def _pct(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{100 * x:.{digits}f} %"


def overview(rows: list[MethodSummary]) -> list[str]:
    """The issue's table: per kernel, CV of time / speedup for the graph and wall regimes and do_bench."""
    by = {(r.kernel, r.method): r for r in rows}
    cols = ("kernelbot-graph", "kernelbot-wall", "do_bench")
    head = " | ".join(f"{label}: CV of time / speedup" for label in ("graph", "wall", "do_bench"))
    lines = [f"| kernel | {head} |", "| --- | --- | --- | --- |"]
    for kernel in dict.fromkeys(r.kernel for r in rows):
        cells = []
        for method in cols:
            r = by.get((kernel, method))
            mark = " ✓" if r is not None and r.target is not None and r.meets_target else ""
            cells.append("-" if r is None else f"{_pct(r.cv_time)} / {_pct(r.cv_speedup)}{mark}")
        lines.append(f"| {kernel} (~{_us(by, kernel)}) | " + " | ".join(cells) + " |")
    return lines


def _us(by: dict[tuple[str, str], MethodSummary], kernel: str) -> str:
    graph = by.get((kernel, "kernelbot-graph"))
    return "?" if graph is None else f"{graph.mean_time_us:.3g} µs"


def markdown(rows: list[MethodSummary], meta: dict[str, Any]) -> str:
    lines = [
        "# Timing stability across fresh processes",
        "",
        f"- GPU: {meta.get('device', '?')}; torch {meta.get('torch', '?')}, "
        f"triton {meta.get('triton', '?')}, Python {meta.get('python', '?')}",
        f"- date: {meta.get('date', '?')}; command: `{meta.get('command', '?')}`",
        f"- targets: graph regime, cross-process CV <= {100 * TARGET_CV:.2f} % of time and speedup; wall "
        "regime (timed as a wall task scores it), CV of the speedup <= "
        + ", ".join(f"{100 * v:.2f} % ({k})" for k, v in WALL_TARGET_CV.items()),
        "",
        *overview(rows),
        "",
        "| kernel | method | evals | candidate time (µs, mean) | CV of time | speedup (mean) | CV of speedup "
        "| target | CI half-width (mean) | claim (mean) | timing stage (s/eval) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        stage = f"{r.mean_stage_s:.2f}" if r.mean_stage_s is not None else ""
        mark = " ✓" if r.target is not None and r.meets_target else ""
        claim = f"{r.mean_claim_low:.4f}" if r.mean_claim_low is not None else ""
        lines.append(
            f"| {r.kernel} | {r.method}{mark} | {r.evaluations} | {r.mean_time_us:.3f} | {_pct(r.cv_time)} | "
            f"{r.mean_speedup:.4f} | {_pct(r.cv_speedup)} | {_pct(r.target, 2) if r.target else ''} | "
            f"{_pct(r.mean_half_width, 2) if r.mean_half_width is not None else ''} | {claim} | {stage} |"
        )
    return "\n".join(lines) + "\n"
