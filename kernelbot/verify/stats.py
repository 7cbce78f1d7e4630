"""Statistics of the end-to-end benchmark: each side's mean and spread, and the relative change of the mean
with a Student-t 95 % confidence interval.

The benchmark's runs alternate (base, change, base, change, ...), so slow drift of the machine lands on both
sides alike; the samples of one side are then treated as independent draws. The change is the ratio of the two
means, R = mean(after) / mean(before), reported as (R - 1) in percent. Its standard error comes from the delta
method, se(R)^2 = R^2 * (s_a^2 / (n_a m_a^2) + s_b^2 / (n_b m_b^2)), with Welch-Satterthwaite degrees of
freedom, so neither side's noise is ignored and unequal spreads are allowed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from evaluators.stats import beta_cdf, cv, mean, stdev

CONFIDENCE = 0.95


@dataclass(frozen=True)
class SampleSummary:
    """One side of the benchmark: how many runs, their mean, sample standard deviation and CV."""

    n: int
    mean: float
    stdev: float
    cv: float
    min: float
    max: float

    def to_dict(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "mean": self.mean,
            "stdev": self.stdev,
            "cv": self.cv,
            "min": self.min,
            "max": self.max,
        }


@dataclass(frozen=True)
class RelativeDelta:
    """mean(after) / mean(before) - 1 in percent, with its confidence interval (None below 2 runs a side)."""

    pct: float
    ci_pct: tuple[float, float] | None
    confidence: float
    df: float | None
    method: str = "ratio of means, delta-method standard error, Welch t"

    def to_dict(self) -> dict[str, object]:
        return {
            "pct": self.pct,
            "ci_pct": list(self.ci_pct) if self.ci_pct else None,
            "confidence": self.confidence,
            "df": self.df,
            "method": self.method,
        }


def summarize(samples: Sequence[float]) -> SampleSummary:
    if not samples:
        raise ValueError("no samples to summarise")
    return SampleSummary(
        n=len(samples),
        mean=mean(samples),
        stdev=stdev(samples),
        cv=cv(samples),
        min=min(samples),
        max=max(samples),
    )


def t_cdf(t: float, df: float) -> float:
    """Student-t distribution function with `df` degrees of freedom (> 0, not necessarily whole)."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    tail = 0.5 * beta_cdf(df / (df + t * t), df / 2.0, 0.5)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (bisection on t_cdf; exact to ~1e-10)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def relative_delta(
    before: Sequence[float], after: Sequence[float], confidence: float = CONFIDENCE
) -> RelativeDelta:
    """The change of the mean from `before` to `after`, in percent, with its t confidence interval."""
    b, a = summarize(before), summarize(after)
    if b.mean == 0.0:
        raise ValueError("the benchmark's mean before the change is 0: no relative change exists")
    ratio = a.mean / b.mean
    pct = 100.0 * (ratio - 1.0)
    if b.n < 2 or a.n < 2:
        return RelativeDelta(pct, None, confidence, None)
    var_a = a.stdev**2 / (a.n * a.mean**2) if a.mean else math.inf
    var_b = b.stdev**2 / (b.n * b.mean**2)
    rel_var = var_a + var_b
    if rel_var == 0.0:  # identical runs on both sides: no noise to widen the interval
        return RelativeDelta(pct, (pct, pct), confidence, None)
    df = rel_var**2 / (var_a**2 / (a.n - 1) + var_b**2 / (b.n - 1))
    half = t_quantile(0.5 + confidence / 2.0, df) * ratio * math.sqrt(rel_var)
    return RelativeDelta(pct, (100.0 * (ratio - half - 1.0), 100.0 * (ratio + half - 1.0)), confidence, df)
