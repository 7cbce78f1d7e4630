"""The benchmark statistics on samples whose answers are known."""

from __future__ import annotations

import math
import random

import pytest

from kernelbot.verify.stats import relative_delta, summarize, t_cdf, t_quantile


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.706204736), (4, 2.776445105), (10, 2.228138852), (30, 2.042272456), (1e6, 1.959966)],
)
def test_t_quantile_matches_the_tables(df: float, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, rel=1e-6)
    assert t_quantile(0.025, df) == pytest.approx(-expected, rel=1e-6)


def test_t_cdf_is_symmetric_and_matches_the_cauchy_case() -> None:
    assert t_cdf(0.0, 3) == pytest.approx(0.5)
    assert t_cdf(1.5, 7) + t_cdf(-1.5, 7) == pytest.approx(1.0)
    # df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/pi.
    for t in (-3.0, -0.4, 0.7, 5.0):
        assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-10)


def test_summary_of_known_samples() -> None:
    s = summarize([98.0, 100.0, 102.0, 99.0, 101.0])
    assert (s.n, s.mean, s.min, s.max) == (5, 100.0, 98.0, 102.0)
    assert s.stdev == pytest.approx(math.sqrt(2.5))
    assert s.cv == pytest.approx(math.sqrt(2.5) / 100.0)


def test_identical_sides_give_a_zero_delta_with_the_pooled_t_interval() -> None:
    # Equal means and spreads: Welch's degrees of freedom are 2 (n - 1) = 4, and the relative standard
    # error is sqrt(2 s^2 / (n m^2)) = sqrt(2 * 100 / (3 * 100^2)).
    d = relative_delta([90.0, 100.0, 110.0], [110.0, 90.0, 100.0])
    assert d.pct == pytest.approx(0.0)
    assert d.df == pytest.approx(4.0)
    half = 100.0 * 2.776445105 * math.sqrt(2.0 / 300.0)
    assert d.ci_pct == pytest.approx((-half, half), rel=1e-6)


def test_a_clear_speedup_has_an_interval_above_zero() -> None:
    before = [100.0, 101.0, 99.0, 100.5, 99.5]
    after = [110.0, 111.0, 109.0, 110.5, 109.5]
    d = relative_delta(before, after)
    assert d.pct == pytest.approx(10.0)
    assert d.ci_pct is not None and 8.0 < d.ci_pct[0] < 10.0 < d.ci_pct[1] < 12.0


def test_one_run_a_side_has_no_interval() -> None:
    d = relative_delta([100.0], [105.0])
    assert d.pct == pytest.approx(5.0) and d.ci_pct is None and d.df is None


def test_noiseless_sides_have_a_degenerate_interval() -> None:
    d = relative_delta([10.0, 10.0], [12.0, 12.0])
    assert d.pct == pytest.approx(20.0) and d.ci_pct == pytest.approx((20.0, 20.0))


def test_zero_mean_before_is_refused() -> None:
    with pytest.raises(ValueError, match="mean before the change is 0"):
        relative_delta([0.0, 0.0], [1.0, 2.0])


def test_the_interval_covers_the_true_change_about_95_percent_of_the_time() -> None:
    rng = random.Random(7)
    trials, covered = 2000, 0
    for _ in range(trials):
        before = [rng.gauss(100.0, 3.0) for _ in range(5)]
        after = [rng.gauss(104.0, 5.0) for _ in range(5)]
        lo, hi = relative_delta(before, after).ci_pct  # type: ignore[misc]
        covered += lo <= 4.0 <= hi
    assert 0.93 <= covered / trials <= 0.97
