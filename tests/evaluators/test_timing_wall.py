"""evaluators.timing_wall.wall_calls_for: how many calls one wall sample takes, from a per-call estimate."""

from __future__ import annotations

import math

import pytest

from evaluators.config import TimingConfig
from evaluators.timing_wall import wall_calls_for

TARGET = TimingConfig().wall_sample_target_us  # 2000 us


@pytest.mark.parametrize(
    ("estimate_us", "calls"),
    [
        (350.0, 6),  # ceil(5.71): the H200's eager reference of a big case, ~2.1 ms per sample
        (600.0, 4),  # ceil(3.33)
        (500.0, 4),  # exactly 4: no extra call for an exact fit
        (2000.0, 1),
        (50_000.0, 1),  # slower than the target on its own: still one call, never zero
    ],
)
def test_a_slow_implementation_takes_fewer_calls(estimate_us: float, calls: int) -> None:
    assert wall_calls_for(estimate_us, TARGET, 10) == calls
    assert calls * estimate_us >= TARGET  # a sample never falls short of the target while calls remain


@pytest.mark.parametrize("estimate_us", [200.0, 30.0, 1.0, 1e-300])
def test_a_fast_implementation_keeps_the_full_count(estimate_us: float) -> None:
    # 1e-300 overflows target / estimate to inf: it must cap, not raise in math.ceil.
    assert wall_calls_for(estimate_us, TARGET, 10) == 10


@pytest.mark.parametrize("estimate_us", [None, 0.0, -5.0, math.nan, math.inf, -math.inf])
def test_an_unusable_estimate_falls_back_to_the_full_count(estimate_us: float | None) -> None:
    assert wall_calls_for(estimate_us, TARGET, 10) == 10


@pytest.mark.parametrize("target_us", [0.0, -1.0, math.nan, math.inf])
def test_a_non_positive_or_non_finite_target_turns_the_adaptation_off(target_us: float) -> None:
    assert wall_calls_for(350.0, target_us, 10) == 10


def test_the_max_calls_cap_holds() -> None:
    # max_calls is already min(wall_calls, the copy budget's cap): no estimate raises the count past it.
    assert wall_calls_for(100.0, TARGET, 3) == 3  # wants 20
    assert wall_calls_for(700.0, TARGET, 3) == 3  # wants exactly 3
    assert wall_calls_for(1000.0, TARGET, 3) == 2
    assert wall_calls_for(1.0, TARGET, 1) == 1
    assert wall_calls_for(None, TARGET, 0) == 1  # a degenerate cap still times one call
