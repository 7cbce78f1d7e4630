"""The wall regime's sampling loop and summary, free of any device code so they run under a fake clock:
rounds of one reference and one candidate sample in random order, stopped by the speedup's confidence
interval instead of a fixed count, summarised from the paired ratios with the fences on the ratios.

Stop rule: after `min_samples` rounds and `min_time_s`, the ratios inside their log-ratio fences
(stats.log_ratio_mask) give a distribution-free 95 % interval for their median; sampling stops once that
interval lies within `ci_target` of the median on either side ("ci"), or at `time_cap_s` ("time cap") or
`max_samples` rounds ("sample cap"). The rule is looked at after every ~5 % more rounds (it sorts the ratios),
never inside a sample.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from evaluators import stats
from evaluators.result import RegimeTiming
from evaluators.timing.sampler import MIN_REL_IQR, Measure, Samples, paired_round, series_stats

_monotonic = time.perf_counter
CONFIDENCE = 0.95
CHECK_GROWTH = 1.05  # the stop rule is looked at again once the rounds grew by this factor (and one)


@dataclass(frozen=True)
class CiStop:
    ci_target: float  # relative half-width of the speedup's interval at which sampling stops
    min_samples: int
    max_samples: int
    min_time_s: float
    time_cap_s: float


def ci_half_width(reference: list[float], candidate: list[float]) -> float:
    """The stop rule's measure: the fenced ratios' median interval, relative to their (plain) median."""
    paired = stats.ratio_speedup(reference, candidate, CONFIDENCE, MIN_REL_IQR, centre=stats.median)
    if paired.pairs < 2:
        return math.inf
    return stats.relative_half_width(paired.speedup, paired.ci_low, paired.ci_high)


def sample_until_ci(
    reference: Measure,
    candidate: Measure,
    rule: CiStop,
    rng: random.Random,
    final_candidate: Measure | None = None,
    clock: Callable[[], float] = _monotonic,
) -> Samples:
    """Paired rounds until the speedup's interval is narrow enough or a cap is hit (see the module doc).

    `final_candidate`, when given, replaces the candidate's measure in one extra last round (the post-timing
    re-check runs inside it); its sample counts like any other.
    """
    out = Samples()
    start = clock()
    min_samples = max(2, rule.min_samples)
    max_samples = max(min_samples, rule.max_samples)
    extra = 1 if final_candidate is not None else 0
    next_check = min_samples
    while True:
        r, c = paired_round(reference, candidate, rng)
        out.reference.append(r)
        out.candidate.append(c)
        n = len(out.reference) + extra
        if n >= max_samples:
            out.stopped = "sample cap"
            break
        elapsed = clock() - start
        if n >= next_check and elapsed >= rule.min_time_s:
            next_check = max(n + 1, math.ceil(n * CHECK_GROWTH))
            if ci_half_width(out.reference, out.candidate) <= rule.ci_target:
                out.stopped = "ci"
                break
        if elapsed >= rule.time_cap_s:
            out.stopped = "time cap"
            break
    if final_candidate is not None:
        r, c = paired_round(reference, final_candidate, rng)
        out.reference.append(r)
        out.candidate.append(c)
    out.elapsed_s = clock() - start
    return out


def summarize_wall(samples: Samples, claim_margin: float, confidence: float = CONFIDENCE) -> RegimeTiming:
    """Each series fenced and summarised as in the graph regime; the speedup from the ratio-fenced pairs
    (Harrell-Davis median, order-statistic interval) and the lower bound a claim may state."""
    paired = stats.ratio_speedup(samples.reference, samples.candidate, confidence, MIN_REL_IQR)
    return RegimeTiming(
        reference=series_stats(samples.reference),
        candidate=series_stats(samples.candidate),
        speedup=paired.speedup,
        ci_low=paired.ci_low,
        ci_high=paired.ci_high,
        claim_low=stats.claim_lower_bound(paired.ci_low, claim_margin, paired.pairs, confidence),
    )
