"""evaluators.stats: fences, medians, spread and the distribution-free intervals, on synthetic samples."""

from __future__ import annotations

import math
import random

import pytest

from evaluators import stats


def test_quantile_matches_linear_interpolation():
    xs = [4.0, 1.0, 3.0, 2.0]
    assert stats.quantile(xs, 0.0) == 1.0
    assert stats.quantile(xs, 1.0) == 4.0
    assert stats.quantile(xs, 0.5) == 2.5
    assert stats.quantile(xs, 0.25) == pytest.approx(1.75)
    assert stats.median([5.0]) == 5.0
    with pytest.raises(ValueError):
        stats.quantile([], 0.5)
    with pytest.raises(ValueError):
        stats.quantile([1.0], 1.5)


def test_tukey_filter_drops_a_slow_outlier_and_keeps_order():
    samples = [10.0, 10.1, 9.9, 10.05, 55.0, 9.95, 10.02]
    kept = stats.tukey_filter(samples)
    assert 55.0 not in kept
    assert kept == [s for s in samples if s != 55.0]
    assert stats.tukey_mask([1.0, 100.0, 2.0]) == [True, True, True]  # too few for quartiles


def test_cv_and_median_rel_se():
    assert stats.cv([2.0]) == 0.0
    assert stats.cv([1.0, 3.0]) == pytest.approx(math.sqrt(2.0) / 2.0)
    assert stats.cv([0.0, 0.0]) == math.inf
    xs = [100.0 + (i % 5 - 2) * 0.5 for i in range(100)]
    se = stats.median_rel_se(xs)
    assert se == pytest.approx(math.sqrt(math.pi / 2) * stats.cv(xs) / 10.0)
    assert stats.median_rel_se([1.0]) == math.inf


def test_median_ci_ranks_match_binomial_tables():
    assert stats.median_ci_ranks(15) == (3, 11)  # 1-based ranks 4 and 12
    assert stats.median_ci_ranks(100) == (39, 60)  # 1-based ranks 40 and 61
    assert stats.median_ci_ranks(5) == (0, 4)  # too few for 95 %: the widest interval
    assert stats.median_ci_ranks(1) == (0, 0)


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(7)
    hits = 0
    trials = 400
    for _ in range(trials):
        xs = [rng.lognormvariate(0.0, 0.5) for _ in range(41)]  # skewed; true median exp(0) = 1
        lo, hi = stats.median_ci(xs)
        hits += lo <= 1.0 <= hi
    assert 0.92 <= hits / trials <= 0.995


def test_bootstrap_ci_is_reproducible_and_brackets_the_median():
    xs = [float(i) for i in range(1, 52)]
    a = stats.bootstrap_median_ci(xs, seed=3, resamples=500)
    b = stats.bootstrap_median_ci(xs, seed=3, resamples=500)
    assert a == b
    assert a[0] < 26.0 < a[1]


def test_paired_speedup_cancels_a_common_drift():
    # Both implementations slow down together (clock drift); the candidate is 2x faster throughout.
    ref = [10.0 * (1 + 0.01 * i) for i in range(30)]
    cand = [5.0 * (1 + 0.01 * i) for i in range(30)]
    ps = stats.paired_speedup(ref, cand)
    assert ps.speedup == pytest.approx(2.0)
    assert ps.ci_low == pytest.approx(2.0) and ps.ci_high == pytest.approx(2.0)
    assert ps.pairs == 30


def test_paired_speedup_drops_pairs_with_an_outlier():
    ref = [10.0] * 20 + [10.0]
    cand = [5.0] * 20 + [500.0]  # one disturbed candidate sample
    ps = stats.paired_speedup(ref, cand)
    assert ps.speedup == pytest.approx(2.0)
    assert ps.pairs == 20
    with pytest.raises(ValueError):
        stats.paired_speedup([1.0], [1.0, 2.0])


def test_paired_speedup_ci_excludes_one_only_for_a_real_speedup():
    rng = random.Random(1)
    same = stats.paired_speedup(
        [rng.gauss(10, 0.2) for _ in range(40)], [rng.gauss(10, 0.2) for _ in range(40)]
    )
    assert same.ci_low < 1.0 < same.ci_high
    faster = stats.paired_speedup(
        [rng.gauss(10, 0.2) for _ in range(40)], [rng.gauss(8, 0.2) for _ in range(40)]
    )
    assert faster.ci_low > 1.0


def test_geometric_mean_and_its_ci():
    assert stats.geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        stats.geometric_mean([1.0, 0.0])
    gm, lo, hi = stats.geometric_mean_ci([(2.0, 2.0, 2.0), (8.0, 8.0, 8.0)])
    assert (gm, lo, hi) == pytest.approx((4.0, 4.0, 4.0))
    # Two cases with equal log half-widths h: the mean's half-width is h * sqrt(2) / 2.
    h = math.log(1.1)
    gm, lo, hi = stats.geometric_mean_ci([(1.0, 1 / 1.1, 1.1), (1.0, 1 / 1.1, 1.1)])
    assert gm == pytest.approx(1.0)
    assert math.log(hi) == pytest.approx(h * math.sqrt(2) / 2)
    assert math.log(lo) == pytest.approx(-h * math.sqrt(2) / 2)


def test_leave_one_out_geometric_means():
    assert stats.leave_one_out_geometric_means([(2.0, 2.0, 2.0)]) == []
    loo = stats.leave_one_out_geometric_means([(4.0, 4.0, 4.0), (1.0, 1.0, 1.0), (0.25, 0.25, 0.25)])
    assert [round(x[0], 6) for x in loo] == [0.5, 1.0, 2.0]


def test_beta_cdf_known_values():
    assert stats.beta_cdf(0.5, 3, 3) == pytest.approx(0.5)
    assert stats.beta_cdf(0.3, 2, 5) == pytest.approx(0.579825)  # 1 - sum of the binomial tail, by hand
    assert stats.beta_cdf(0.0, 2, 2) == 0.0 and stats.beta_cdf(1.0, 2, 2) == 1.0
    assert stats.beta_cdf(0.45, 100.5, 100.5) + stats.beta_cdf(0.55, 100.5, 100.5) == pytest.approx(1.0)


def test_harrell_davis_median_is_smooth_under_quantisation():
    assert stats.harrell_davis([5.0]) == 5.0
    assert stats.harrell_davis([1.0, 2.0, 3.0]) == pytest.approx(2.0)  # symmetric sample: the centre
    # A tick-quantised sample: the plain median snaps to a tick, Harrell-Davis follows the true centre.
    rng = random.Random(0)
    med_err, hd_err = [], []
    for _ in range(200):
        true = 200.0 + rng.random()
        xs = [float(round(rng.gauss(true, 0.4))) for _ in range(31)]
        med_err.append((stats.median(xs) - true) ** 2)
        hd_err.append((stats.harrell_davis(xs) - true) ** 2)
    assert sum(hd_err) < 0.7 * sum(med_err)


def test_min_rel_iqr_keeps_one_tick_neighbours():
    ticks = [100.0] * 20 + [101.0] * 3 + [99.0] * 2 + [180.0]
    assert 101.0 not in stats.tukey_filter(ticks)  # bare fences: IQR 0 throws away every neighbour
    kept = stats.tukey_filter(ticks, min_rel_iqr=0.01)
    assert 101.0 in kept and 99.0 in kept and 180.0 not in kept


def test_paired_speedup_interval_contains_the_estimate():
    rng = random.Random(3)
    ref = [float(round(rng.gauss(200, 0.5))) for _ in range(25)]
    cand = [float(round(rng.gauss(100, 0.5))) for _ in range(25)]
    ps = stats.paired_speedup(ref, cand, min_rel_iqr=0.01)
    assert ps.ci_low <= ps.speedup <= ps.ci_high
    assert ps.speedup == pytest.approx(2.0, rel=0.01)
