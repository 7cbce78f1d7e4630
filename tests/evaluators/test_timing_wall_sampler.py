"""The wall regime's sampling loop under a fake clock (evaluators.timing.wall_sampler) and the statistics it
rests on (evaluators.stats: fences on the paired ratios, the interval's half-width, the claimable bound)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from evaluators import stats
from evaluators.timing.sampler import Samples
from evaluators.timing.wall_sampler import CiStop, ci_half_width, sample_until_ci, summarize_wall


class FakeClock:
    """Advances `step` seconds per reading: the loop's notion of elapsed time, independent of the CPU."""

    def __init__(self, step: float = 1e-4) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def noisy(mean: float, rel_sd: float, seed: int):
    rng = random.Random(seed)
    return lambda: mean * (1.0 + rng.gauss(0.0, rel_sd))


RULE = CiStop(ci_target=0.005, min_samples=15, max_samples=5000, min_time_s=0.0, time_cap_s=1e9)


# --- statistics --------------------------------------------------------------------------------------------


def test_the_ratio_fences_drop_a_round_an_interrupt_hit_and_keep_a_load_burst_that_hit_both():
    # 80 rounds at 10 / 5 us; in 6 of them a neighbour's burst slowed both samples by 30 %; one sample was
    # interrupted.
    reference = [10.0, 10.1, 9.9, 10.0] * 20
    candidate = [5.0, 5.05, 4.95, 5.0] * 20
    for i in (30, 31, 32, 60, 61, 62):
        reference[i] *= 1.3
        candidate[i] *= 1.3
    candidate[7] = 50.0
    mask = stats.log_ratio_mask(reference, candidate, min_rel_iqr=0.01)
    assert [i for i, keep in enumerate(mask) if not keep] == [7]
    assert len(stats.fenced_ratios(reference, candidate, 0.01)) == 79
    paired = stats.ratio_speedup(reference, candidate, min_rel_iqr=0.01)
    assert paired.pairs == 79 and paired.ci_low <= 2.0 <= paired.ci_high
    assert paired.ci_low <= paired.speedup <= paired.ci_high
    # Fences on each series (the graph regime's) also drop the burst's six good rounds.
    assert stats.paired_speedup(reference, candidate, min_rel_iqr=0.01).pairs == 73


def test_pairs_with_a_non_positive_time_are_never_kept_and_few_pairs_are_all_kept():
    assert stats.log_ratio_mask([1.0, 2.0, 3.0], [1.0, 0.0, 100.0]) == [True, False, True]
    assert stats.ratio_speedup([1.0], [0.0]).pairs == 0
    with pytest.raises(ValueError):
        stats.log_ratio_mask([1.0], [1.0, 2.0])


def test_relative_half_width_and_the_lower_bound_a_claim_may_state():
    assert stats.relative_half_width(2.0, 1.9, 2.05) == pytest.approx(0.05)
    assert stats.relative_half_width(2.0, math.nan, 2.1) == math.inf
    assert not stats.ci_covers(5) and stats.ci_covers(6)  # (min, max) of 5 covers 93.75 %, of 6 96.9 %
    assert stats.claim_lower_bound(1.50, 0.01, pairs=100) == pytest.approx(1.50 / 1.01)
    assert stats.claim_lower_bound(1.50, 0.01, pairs=5) is None  # too few for a 95 % interval
    assert stats.claim_lower_bound(math.inf, 0.01, pairs=100) is None
    assert stats.claim_lower_bound(1.50, -1.0, pairs=100) == 1.50  # a margin never raises the bound


# --- the loop ----------------------------------------------------------------------------------------------


def test_sampling_stops_once_the_interval_is_narrow_enough():
    s = sample_until_ci(noisy(20.0, 0.02, 1), noisy(10.0, 0.02, 2), RULE, random.Random(0), clock=FakeClock())
    assert s.stopped == "ci"
    assert ci_half_width(s.reference, s.candidate) <= RULE.ci_target
    # ~2.5 sigma_ratio / sqrt(n) with sigma_ratio ~2.8 %: a couple of hundred pairs, not the cap.
    assert 60 < len(s.reference) < 1000


def test_a_noisier_pair_takes_more_rounds_for_the_same_interval():
    quiet = sample_until_ci(
        noisy(20.0, 0.01, 3), noisy(10.0, 0.01, 4), RULE, random.Random(0), clock=FakeClock()
    )
    loud = sample_until_ci(
        noisy(20.0, 0.04, 3), noisy(10.0, 0.04, 4), RULE, random.Random(0), clock=FakeClock()
    )
    assert quiet.stopped == loud.stopped == "ci"
    assert len(loud.reference) > 4 * len(quiet.reference)


def test_min_samples_and_min_time_come_before_the_rule():
    exact = CiStop(ci_target=0.5, min_samples=15, max_samples=100, min_time_s=0.0, time_cap_s=1e9)
    s = sample_until_ci(lambda: 10.0, lambda: 5.0, exact, random.Random(0), clock=FakeClock())
    assert s.stopped == "ci" and len(s.reference) == 15
    slow = CiStop(ci_target=0.5, min_samples=15, max_samples=10_000, min_time_s=0.05, time_cap_s=1e9)
    s = sample_until_ci(lambda: 10.0, lambda: 5.0, slow, random.Random(0), clock=FakeClock(step=1e-3))
    assert s.stopped == "ci" and s.elapsed_s >= 0.05 and len(s.reference) > 15


def test_the_time_cap_and_the_sample_cap_end_an_interval_that_never_narrows():
    never = CiStop(ci_target=1e-9, min_samples=15, max_samples=10_000, min_time_s=0.0, time_cap_s=0.02)
    s = sample_until_ci(
        noisy(10, 0.05, 5), noisy(10, 0.05, 6), never, random.Random(0), clock=FakeClock(1e-3)
    )
    assert s.stopped == "time cap" and len(s.reference) <= 21  # one clock reading (1 ms) per round
    capped = CiStop(ci_target=1e-9, min_samples=15, max_samples=40, min_time_s=0.0, time_cap_s=1e9)
    s = sample_until_ci(noisy(10, 0.05, 5), noisy(10, 0.05, 6), capped, random.Random(0), clock=FakeClock())
    assert s.stopped == "sample cap" and len(s.reference) == 40


def test_the_rule_is_looked_at_after_every_few_percent_more_rounds(monkeypatch):
    from evaluators.timing import wall_sampler

    looked: list[int] = []
    real = wall_sampler.ci_half_width

    def counting(reference, candidate):
        looked.append(len(reference))
        return real(reference, candidate)

    monkeypatch.setattr(wall_sampler, "ci_half_width", counting)
    never = CiStop(ci_target=1e-9, min_samples=20, max_samples=2000, min_time_s=0.0, time_cap_s=1e9)
    s = sample_until_ci(noisy(10, 0.05, 7), noisy(10, 0.05, 8), never, random.Random(0), clock=FakeClock())
    assert s.stopped == "sample cap" and looked[0] == 20
    assert len(looked) < 120  # ~log(2000 / 20) / log(1.05) looks, not 2000
    assert all(b >= max(a + 1, math.ceil(a * 1.05)) for a, b in itertools.pairwise(looked))


def test_rounds_are_paired_in_random_order_and_the_final_candidate_runs_last():
    order: list[str] = []
    ref = lambda: order.append("r") or 10.0
    cand = lambda: order.append("c") or 5.0
    final = lambda: order.append("final") or 5.0
    exact = CiStop(ci_target=0.5, min_samples=16, max_samples=100, min_time_s=0.0, time_cap_s=1e9)
    s = sample_until_ci(ref, cand, exact, random.Random(0), final_candidate=final, clock=FakeClock())
    assert order.count("final") == 1 and order[-1] in ("final", "r") and "final" in order[-2:]
    rounds = [tuple(order[i : i + 2]) for i in range(0, len(order) - 2, 2)]
    assert set(rounds) == {("r", "c"), ("c", "r")}
    assert len(s.reference) == len(s.candidate) == 16  # the final round counts towards min_samples


# --- the summary -------------------------------------------------------------------------------------------


def test_the_wall_summary_reports_the_interval_and_the_claimable_bound():
    rng = random.Random(9)
    ref = [20.0 * (1 + rng.gauss(0, 0.02)) for _ in range(300)]
    cand = [10.0 * (1 + rng.gauss(0, 0.02)) for _ in range(300)]
    cand[17] = 400.0  # a preempted sample: fenced, it moves nothing
    timing = summarize_wall(Samples(ref, cand, "ci", 0.1), claim_margin=0.01)
    assert timing.ci_low <= timing.speedup <= timing.ci_high
    assert timing.speedup == pytest.approx(2.0, rel=0.01)
    assert timing.claim_low == pytest.approx(timing.ci_low / 1.01)
    assert timing.claim_low < timing.ci_low <= timing.speedup
    few = summarize_wall(Samples([2.0] * 5, [1.0] * 5, "time cap", 0.01), claim_margin=0.01)
    assert few.speedup == pytest.approx(2.0) and few.claim_low is None


def test_the_claimable_bound_survives_a_json_round_trip_and_old_results_still_load():
    from evaluators.result import CaseResult, EvalResult, Stage

    timing = summarize_wall(Samples([2.0, 2.1, 1.9] * 4, [1.0] * 12, "ci", 0.1), claim_margin=0.01)
    result = EvalResult(
        "t",
        "sha",
        "triton-cuda",
        "wall",
        Stage.TIMING,
        True,
        cases=(CaseResult("c", {}, True, timings={"wall": timing}),),
    )
    back = EvalResult.from_json(result.to_json())
    assert back == result and back.cases[0].timings["wall"].claim_low == timing.claim_low
    data = result.to_dict()
    del data["cases"][0]["timings"]["wall"]["claim_low"]  # a verdict written before the field existed
    assert EvalResult.from_dict(data).cases[0].timings["wall"].claim_low is None
