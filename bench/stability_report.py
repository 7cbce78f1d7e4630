"""The summary of bench/stability.py, kept pure so it is tested on CPU: per kernel and timing method, the
cross-process coefficient of variation of the candidate's reported time and of its speedup over the reference
(`summarize`), checked against the 0.25 % acceptance target of the graph regime, and the markdown table that
goes into stability.md and docs/benchmarks.md (`markdown`). The driver that runs the fresh processes and
collects their records stays in bench/stability.py.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

METHODS = ("kernelbot-graph", "kernelbot-wall", "do_bench", "do_bench_cudagraph")
TARGET_CV = 0.0025  # the acceptance target for the graph regime: 0.25 %


def cross_cv(values: list[float]) -> float:
    """Cross-process coefficient of variation: sample stdev over mean."""
    if len(values) < 2:
        return math.nan
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else math.inf


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

    @property
    def meets_target(self) -> bool:
        return self.cv_time <= TARGET_CV and self.cv_speedup <= TARGET_CV


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
                )
            )
    return rows


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.3f} %"


def markdown(rows: list[MethodSummary], meta: dict[str, Any]) -> str:
    lines = [
        "# Timing stability across fresh processes",
        "",
        f"- GPU: {meta.get('device', '?')}; torch {meta.get('torch', '?')}, "
        f"triton {meta.get('triton', '?')}, Python {meta.get('python', '?')}",
        f"- date: {meta.get('date', '?')}; command: `{meta.get('command', '?')}`",
        f"- target: cross-process CV <= {100 * TARGET_CV:.2f} % of time and speedup (graph regime)",
        "",
        "| kernel | method | evals | candidate time (µs, mean) | CV of time | speedup (mean) | CV of speedup "
        "| timing stage (s/eval) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        stage = f"{r.mean_stage_s:.2f}" if r.mean_stage_s is not None else ""
        mark = " ✓" if r.method == "kernelbot-graph" and r.meets_target else ""
        lines.append(
            f"| {r.kernel} | {r.method}{mark} | {r.evaluations} | {r.mean_time_us:.3f} | {_pct(r.cv_time)} | "
            f"{r.mean_speedup:.4f} | {_pct(r.cv_speedup)} | {stage} |"
        )
    return "\n".join(lines) + "\n"
