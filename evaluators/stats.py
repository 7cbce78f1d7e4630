"""Small, dependency-free statistics for the timing stage: outlier fences, medians, spread, and confidence
intervals that assume nothing about the shape of the timing distribution.

Timing samples are skewed (a context switch or a clock dip makes one sample slow, nothing makes one fast) and
sometimes quantised (CUDA events tick in ~0.5 µs steps), so everything here is rank-based where it matters:
Tukey fences instead of sigma clipping, medians instead of means, and order-statistic intervals for the median
of paired ratios instead of a t-interval.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# The relative standard error of a sample median is sqrt(pi/2) times that of the mean for normal data.
_MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2.0)
# Two-sided 95 % normal quantile: turns an interval's half-width back into a standard error.
Z95 = 1.959963984540054


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of `values`; q in [0, 1]."""
    if not values:
        raise ValueError("quantile of an empty sequence")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q must lie in [0, 1], got {q}")
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return quantile(values, 0.5)


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz), for x < (a + 1) / (a + b + 2)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """Regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def harrell_davis(values: Sequence[float], q: float = 0.5) -> float:
    """Harrell-Davis estimate of the q-quantile: a Beta-weighted average of all order statistics.

    Timing samples come quantised (CUDA events tick in fixed steps), and a plain median snaps to one step;
    this estimator averages over neighbouring steps, so a sub-step shift of the distribution moves it, and
    two runs of the same kernel agree more closely. With outliers fenced off beforehand it stays robust.
    """
    if not values:
        raise ValueError("quantile of an empty sequence")
    xs = sorted(values)
    n = len(xs)
    if n == 1:
        return xs[0]
    a, b = (n + 1) * q, (n + 1) * (1.0 - q)
    cdf = [beta_cdf(i / n, a, b) for i in range(n + 1)]
    return math.fsum((cdf[i + 1] - cdf[i]) * xs[i] for i in range(n))


def tukey_fences(values: Sequence[float], k: float = 1.5, min_rel_iqr: float = 0.0) -> tuple[float, float]:
    """(Q1 - k*IQR, Q3 + k*IQR): samples outside are outliers.

    `min_rel_iqr` floors the IQR at that fraction of the median: quantised timings often have IQR 0 (most
    samples on one tick), and bare fences would then call every sample one tick away an outlier.
    """
    q1, q3 = quantile(values, 0.25), quantile(values, 0.75)
    iqr = max(q3 - q1, min_rel_iqr * abs(median(values)))
    return q1 - k * iqr, q3 + k * iqr


def tukey_mask(values: Sequence[float], k: float = 1.5, min_rel_iqr: float = 0.0) -> list[bool]:
    """True for each sample inside the fences; fewer than four samples have no useful quartiles: keep all."""
    if len(values) < 4:
        return [True] * len(values)
    lo, hi = tukey_fences(values, k, min_rel_iqr)
    return [lo <= v <= hi for v in values]


def tukey_filter(values: Sequence[float], k: float = 1.5, min_rel_iqr: float = 0.0) -> list[float]:
    """The samples inside the Tukey fences, in their original order."""
    return [v for v, keep in zip(values, tukey_mask(values, k, min_rel_iqr), strict=True) if keep]


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of an empty sequence")
    return math.fsum(values) / len(values)


def stdev(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0 for fewer than two samples."""
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))


def cv(values: Sequence[float]) -> float:
    """Coefficient of variation (stdev / mean); 0 for fewer than two samples, inf for a zero mean."""
    if len(values) < 2:
        return 0.0
    m = mean(values)
    if m == 0.0:
        return math.inf
    return stdev(values) / abs(m)


def median_rel_se(values: Sequence[float]) -> float:
    """Relative standard error of the median of `values` (the sampling loop stops once it is small enough).

    Uses the large-sample result SE(median) ~= sqrt(pi/2) * sigma / sqrt(n); callers pass fenced samples, so
    the stdev is not inflated by the rare slow outlier.
    """
    n = len(values)
    if n < 2:
        return math.inf
    return _MEDIAN_SE_FACTOR * cv(values) / math.sqrt(n)


def _log_binom_pmf(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0)


@functools.lru_cache(maxsize=8192)  # the wall regime's stop rule asks again for every few more pairs
def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int]:
    """0-based ranks (lo, hi) of the sorted sample bounding a distribution-free CI for the median.

    With B ~ Binomial(n, 1/2) samples below the true median, x_(j) lies above it with probability P(B <= j);
    the largest j keeping that (and, by symmetry, the upper side) under (1 - confidence) / 2 is chosen. When n
    is too small for the asked confidence the widest interval (min, max) is returned; its coverage is
    1 - 2^(1-n).
    """
    if n < 1:
        raise ValueError("median CI of an empty sample")
    alpha = 1.0 - confidence
    best = 0
    cdf = 0.0
    for k in range(n // 2):
        cdf += math.exp(_log_binom_pmf(n, k))  # P(B <= k)
        if cdf > alpha / 2.0:
            break
        best = k
    return best, n - 1 - best


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval for the median (order statistics, see median_ci_ranks)."""
    xs = sorted(values)
    lo, hi = median_ci_ranks(len(xs), confidence)
    return xs[lo], xs[hi]


def bootstrap_median_ci(
    values: Sequence[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap CI for the median with a fixed generator (reproducible for the same samples)."""
    if not values:
        raise ValueError("bootstrap of an empty sample")
    rng = random.Random(seed)
    xs = list(values)
    meds = sorted(median(rng.choices(xs, k=len(xs))) for _ in range(resamples))
    alpha = 1.0 - confidence
    return quantile(meds, alpha / 2.0), quantile(meds, 1.0 - alpha / 2.0)


@dataclass(frozen=True)
class PairedSpeedup:
    speedup: float  # median over kept pairs of reference / candidate
    ci_low: float
    ci_high: float
    pairs: int  # pairs kept (both samples inside their own series' fences)


def paired_speedup(
    reference: Sequence[float],
    candidate: Sequence[float],
    confidence: float = 0.95,
    min_rel_iqr: float = 0.0,
) -> PairedSpeedup:
    """Speedup from paired samples: sample i of each series was taken in the same round, back to back.

    Pairing cancels slow drifts (clocks, temperature) that hit both implementations alike. A pair is dropped
    when either of its samples lies outside its own series' Tukey fences. The point estimate is the
    Harrell-Davis median of the kept ratios (smooth under quantised timings); the interval comes from their
    order statistics and always contains the estimate.
    """
    if len(reference) != len(candidate):
        raise ValueError(f"paired samples need equal lengths, got {len(reference)} and {len(candidate)}")
    if not reference:
        raise ValueError("paired speedup of no samples")
    keep_ref = tukey_mask(reference, min_rel_iqr=min_rel_iqr)
    keep_cand = tukey_mask(candidate, min_rel_iqr=min_rel_iqr)
    pairs = zip(reference, candidate, keep_ref, keep_cand, strict=True)
    ratios = [r / c for r, c, kr, kc in pairs if kr and kc and c > 0.0]
    if not ratios:  # every pair had an outlier or a zero time: fall back to all usable pairs
        ratios = [r / c for r, c in zip(reference, candidate, strict=True) if c > 0.0]
    if not ratios:
        return PairedSpeedup(math.inf, math.inf, math.inf, 0)
    lo, hi = median_ci(ratios, confidence)
    centre = harrell_davis(ratios)
    return PairedSpeedup(centre, min(lo, centre), max(hi, centre), len(ratios))


def log_ratio_mask(
    reference: Sequence[float], candidate: Sequence[float], k: float = 1.5, min_rel_iqr: float = 0.0
) -> list[bool]:
    """True for each pair whose ratio reference / candidate lies inside the Tukey fences of the log ratios.

    Fencing the ratios rather than each series keeps what pairing is for: a load change that slows both
    samples of a round alike leaves its ratio alone (per-series fences would drop such rounds wholesale,
    and with them the rounds' balance), while an interrupt or a preemption that hits one sample of a round
    makes that round's ratio an outlier. `min_rel_iqr` floors the IQR of the logs at log(1 + min_rel_iqr).
    A pair with a non-positive time is never kept; fewer than four usable pairs are all kept.
    """
    if len(reference) != len(candidate):
        raise ValueError(f"paired samples need equal lengths, got {len(reference)} and {len(candidate)}")
    usable = [r > 0.0 and c > 0.0 for r, c in zip(reference, candidate, strict=True)]
    logs = [math.log(r / c) for r, c, ok in zip(reference, candidate, usable, strict=True) if ok]
    if len(logs) < 4:
        return usable
    q1, q3 = quantile(logs, 0.25), quantile(logs, 0.75)
    iqr = max(q3 - q1, math.log1p(min_rel_iqr))
    lo, hi = q1 - k * iqr, q3 + k * iqr
    kept = iter(lo <= v <= hi for v in logs)
    return [ok and next(kept) for ok in usable]


def fenced_ratios(
    reference: Sequence[float], candidate: Sequence[float], min_rel_iqr: float = 0.0
) -> list[float]:
    """The per-pair ratios reference / candidate inside the log-ratio fences (see log_ratio_mask)."""
    mask = log_ratio_mask(reference, candidate, min_rel_iqr=min_rel_iqr)
    return [r / c for r, c, keep in zip(reference, candidate, mask, strict=True) if keep]


def ratio_speedup(
    reference: Sequence[float],
    candidate: Sequence[float],
    confidence: float = 0.95,
    min_rel_iqr: float = 0.0,
    centre: Callable[[Sequence[float]], float] = harrell_davis,
) -> PairedSpeedup:
    """Speedup from paired samples with the fences on the ratios (log_ratio_mask), not on each series.

    The estimate is `centre` of the kept ratios (Harrell-Davis by default; the stop rule of the wall regime
    passes the plain median, which costs a sort instead of a Beta weight per sample), the interval the
    distribution-free one from their order statistics; it always contains the estimate.
    """
    if not reference:
        raise ValueError("paired speedup of no samples")
    ratios = fenced_ratios(reference, candidate, min_rel_iqr)
    if not ratios:
        return PairedSpeedup(math.inf, math.inf, math.inf, 0)
    lo, hi = median_ci(ratios, confidence)
    mid = centre(ratios)
    return PairedSpeedup(mid, min(lo, mid), max(hi, mid), len(ratios))


def relative_half_width(estimate: float, ci_low: float, ci_high: float) -> float:
    """The larger distance from the estimate to an end of its interval, as a fraction of the estimate."""
    if not (math.isfinite(estimate) and estimate > 0 and math.isfinite(ci_low) and math.isfinite(ci_high)):
        return math.inf
    return max(estimate - ci_low, ci_high - estimate) / estimate


def ci_covers(n: int, confidence: float = 0.95) -> bool:
    """Whether n samples can give a distribution-free median interval at `confidence` at all: the widest
    one, (min, max), covers the median with probability 1 - 2^(1-n) (n >= 6 for 95 %)."""
    return n >= 1 and 1.0 - 2.0 ** (1 - n) >= confidence


def claim_lower_bound(ci_low: float, margin: float, pairs: int, confidence: float = 0.95) -> float | None:
    """The lowest speedup a claim may state: the interval's lower end, divided by 1 + `margin`.

    The interval covers the noise within one process; `margin` stands for what a fresh process adds on top
    (new allocations, clocks, placement: the cross-process scatter the stability benchmark measures). None
    when the pairs are too few for an interval at `confidence` (see ci_covers) or the lower end is unusable.
    """
    if not ci_covers(pairs, confidence) or not (math.isfinite(ci_low) and ci_low > 0):
        return None
    return ci_low / (1.0 + max(0.0, margin))


def geometric_mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("geometric mean of an empty sequence")
    if any(v <= 0.0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def geometric_mean_ci(estimates: Sequence[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Geometric mean of (value, ci_low, ci_high) estimates and a CI for it.

    In log space the geometric mean is an average; treating each case's interval half-widths (lower and upper
    separately, the intervals are asymmetric) as independent errors, they add in quadrature and shrink by the
    number of cases.
    """
    if not estimates:
        raise ValueError("geometric mean of no estimates")
    k = len(estimates)
    logs = [math.log(v) for v, _, _ in estimates]
    centre = math.fsum(logs) / k
    below = math.sqrt(math.fsum((math.log(v) - math.log(lo)) ** 2 for v, lo, _ in estimates)) / k
    above = math.sqrt(math.fsum((math.log(hi) - math.log(v)) ** 2 for v, _, hi in estimates)) / k
    return math.exp(centre), math.exp(centre - below), math.exp(centre + above)


def leave_one_out_geometric_means(
    estimates: Sequence[tuple[float, float, float]],
) -> list[tuple[float, float, float]]:
    """For each estimate i, the geometric mean (with CI) of all the others; empty for fewer than two."""
    if len(estimates) < 2:
        return []
    return [geometric_mean_ci([e for j, e in enumerate(estimates) if j != i]) for i in range(len(estimates))]
