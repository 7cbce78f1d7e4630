"""The sampling loop shared by both regimes, free of any GPU code so its control flow is testable anywhere:
warm up, then take (reference, candidate) samples in rounds, in random order within each round, until both
medians are known to `cv_target` and the median per-round speedup to `speedup_se_target` (relative standard
errors) after at least `min_time_s` of sampling, or the time cap or the sample cap is reached;
then summarise: Tukey fences, medians, CVs, and the paired speedup with its confidence interval.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from evaluators import stats
from evaluators.config import TimingConfig
from evaluators.result import RegimeTiming, TimingStats

Measure = Callable[[], float]
_monotonic = time.perf_counter

MIN_WARMUP_ROUNDS = 2
# Timing samples within 1 % of the median are never outliers, however narrow the quartiles (see tukey_fences).
MIN_REL_IQR = 0.01


@dataclass
class Samples:
    reference: list[float] = field(default_factory=list)
    candidate: list[float] = field(default_factory=list)
    stopped: str = ""  # "cv" | "time cap" | "sample cap"
    elapsed_s: float = 0.0


def warm_up(
    measures: Sequence[Measure],
    warmup_ms: float,
    clock: Callable[[], float] = _monotonic,
    min_rounds: int = MIN_WARMUP_ROUNDS,
) -> int:
    """Run the measures round-robin for warmup_ms (at least `min_rounds` rounds); returns the rounds."""
    deadline = clock() + warmup_ms / 1e3
    rounds = 0
    while rounds < min_rounds or clock() < deadline:
        for measure in measures:
            measure()
        rounds += 1
    return rounds


def _converged(series: list[float], target: float) -> bool:
    return stats.median_rel_se(stats.tukey_filter(series, min_rel_iqr=MIN_REL_IQR)) <= target


def _speedup_converged(samples: Samples, target: float) -> bool:
    if target <= 0:
        return True
    ratios = [r / c for r, c in zip(samples.reference, samples.candidate, strict=True) if c > 0]
    return len(ratios) >= 2 and _converged(ratios, target)


def sample_interleaved(
    reference: Measure,
    candidate: Measure,
    config: TimingConfig,
    rng: random.Random,
    final_candidate: Measure | None = None,
    clock: Callable[[], float] = _monotonic,
) -> Samples:
    """Paired samples until both medians converge or a cap is hit.

    `final_candidate`, when given, replaces the candidate's measure in one extra last round (the post-timing
    re-check runs inside it); its sample counts like any other.
    """
    out = Samples()
    start = clock()
    min_samples = max(2, config.min_samples)
    max_samples = max(min_samples, config.max_samples)
    while True:
        pair = paired_round(reference, candidate, rng)
        out.reference.append(pair[0])
        out.candidate.append(pair[1])
        n = len(out.reference) + (1 if final_candidate is not None else 0)
        if n >= max_samples:
            out.stopped = "sample cap"
            break
        if n < min_samples:
            continue
        if (
            clock() - start >= config.min_time_s
            and _converged(out.reference, config.cv_target)
            and _converged(out.candidate, config.cv_target)
            and _speedup_converged(out, config.speedup_se_target)
        ):
            out.stopped = "cv"
            break
        if clock() - start >= config.time_cap_s:
            out.stopped = "time cap"
            break
    if final_candidate is not None:
        pair = paired_round(reference, final_candidate, rng)
        out.reference.append(pair[0])
        out.candidate.append(pair[1])
    out.elapsed_s = clock() - start
    return out


def paired_round(reference: Measure, candidate: Measure, rng: random.Random) -> tuple[float, float]:
    if rng.random() < 0.5:
        r = reference()
        c = candidate()
    else:
        c = candidate()
        r = reference()
    return r, c


def series_stats(samples: Sequence[float]) -> TimingStats:
    """Fenced samples summarised; the median is the Harrell-Davis estimate (see stats.harrell_davis)."""
    kept = stats.tukey_filter(samples, min_rel_iqr=MIN_REL_IQR)
    return TimingStats(
        median_us=stats.harrell_davis(kept),
        cv=stats.cv(kept),
        samples=len(kept),
        outliers=len(samples) - len(kept),
    )


def summarize(samples: Samples, confidence: float = 0.95, claim_margin: float = 0.0) -> RegimeTiming:
    """The graph regime's summary: pairs dropped where either sample is outside its own series' fences."""
    paired = stats.paired_speedup(samples.reference, samples.candidate, confidence, MIN_REL_IQR)
    return RegimeTiming(
        reference=series_stats(samples.reference),
        candidate=series_stats(samples.candidate),
        speedup=paired.speedup,
        ci_low=paired.ci_low,
        ci_high=paired.ci_high,
        claim_low=stats.claim_lower_bound(paired.ci_low, claim_margin, paired.pairs, confidence),
    )
