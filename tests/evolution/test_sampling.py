"""Statistical checks of parent sampling, with fixed seeds and tolerant bounds."""

from __future__ import annotations

import random
from collections import Counter

from search_fakes import timed_program

from evaluators.result import EvalResult, Stage
from evolution.config import ArchiveConfig, FeatureDim, SamplingConfig
from evolution.islands import Archive
from evolution.sampling import WEIGHT_FLOOR, ParentSampler, case_leaders, run_case_leaders
from evolution.types import Program

N = 6000
DIMS = (FeatureDim("complexity", bins=10, low=0, high=10), FeatureDim("diversity", bins=1))


def island_with(scores: dict[str, float], failing: tuple[str, ...] = ()):
    archive = Archive(ArchiveConfig(islands=1, features=DIMS))
    for i, (pid, score) in enumerate(scores.items()):
        correct = pid not in failing
        result = EvalResult("t", pid, "f", "wall", Stage.TIMING, correct, correct=correct, score=score)
        archive.place(
            Program(pid, "x", pid, None, "op", 0, 0, result, created_at=i),
            0,
            {"complexity": i + 0.5, "diversity": 0.0},
        )
    return archive.island(0)


def test_mode_frequencies_follow_the_ratios() -> None:
    sampler = ParentSampler(SamplingConfig(explore=0.2, exploit=0.5, weighted=0.3), random.Random(1))
    counts = Counter(sampler.mode() for _ in range(N))
    for mode, ratio in (("explore", 0.2), ("exploit", 0.5), ("weighted", 0.3)):
        assert abs(counts[mode] / N - ratio) < 0.025, counts


def test_ratios_need_not_sum_to_one_and_zero_disables_a_mode() -> None:
    sampler = ParentSampler(SamplingConfig(explore=2, exploit=0, weighted=2), random.Random(2))
    counts = Counter(sampler.mode() for _ in range(N))
    assert counts["exploit"] == 0
    assert abs(counts["explore"] / N - 0.5) < 0.03


def test_explore_is_uniform_over_elites() -> None:
    island = island_with({f"p{i}": float(i + 1) for i in range(5)})
    sampler = ParentSampler(SamplingConfig(), random.Random(3))
    counts = Counter(sampler.parent(island, "explore")[0].id for _ in range(N))
    assert set(counts) == {f"p{i}" for i in range(5)}
    for c in counts.values():
        assert abs(c / N - 0.2) < 0.025


def test_exploit_draws_only_from_the_top() -> None:
    island = island_with({f"p{i}": float(i + 1) for i in range(6)})
    sampler = ParentSampler(SamplingConfig(exploit_top=2), random.Random(4))
    counts = Counter(sampler.parent(island, "exploit")[0].id for _ in range(2000))
    assert set(counts) == {"p5", "p4"}
    assert abs(counts["p5"] / 2000 - 0.5) < 0.05


def test_weighted_is_proportional_to_fitness_with_a_floor_for_failures() -> None:
    island = island_with({"a": 1.0, "b": 3.0, "bad": 0.0}, failing=("bad",))
    sampler = ParentSampler(SamplingConfig(), random.Random(5))
    counts = Counter(sampler.parent(island, "weighted")[0].id for _ in range(N))
    wa, wb, wbad = 1.0 + WEIGHT_FLOOR, 3.0 + WEIGHT_FLOOR, WEIGHT_FLOOR
    total = wa + wb + wbad
    assert abs(counts["a"] / N - wa / total) < 0.025
    assert abs(counts["b"] / N - wb / total) < 0.025
    assert 0 < counts["bad"] < 0.04 * N


def test_same_seed_same_choices() -> None:
    island = island_with({f"p{i}": float(i + 1) for i in range(5)})
    picks = [
        [ParentSampler(SamplingConfig(), r).choose(island).parent.id for _ in range(50)]
        for r in (random.Random(7), random.Random(7))
    ]
    assert picks[0] == picks[1]


def test_inspirations_are_best_top_and_neighbours_never_the_parent() -> None:
    island = island_with({f"p{i}": float(i + 1) for i in range(8)})
    sampler = ParentSampler(SamplingConfig(top_n=2, diverse=2), random.Random(8))
    parent = next(p for p in island.elites() if p.id == "p2")
    ids = [p.id for p in sampler.inspirations(island, parent)]
    assert ids[0] == "p7"  # the island's best comes first
    assert ids[1:3] == ["p6", "p5"]  # then the top-N
    assert set(ids[3:]) <= {"p0", "p1", "p3", "p4"} and len(ids[3:]) == 2  # cells within 2 of p2's
    assert "p2" not in ids and len(ids) == len(set(ids))
    best = next(p for p in island.elites() if p.id == "p7")
    assert "p7" not in [p.id for p in sampler.inspirations(island, best)]


def test_correct_only_never_hands_a_wrong_parent_to_an_operator_that_cannot_repair_it() -> None:
    island = island_with({"a": 1.0, "bad1": 0.0, "bad2": 0.0}, failing=("bad1", "bad2"))
    sampler = ParentSampler(SamplingConfig(explore=1, exploit=1, weighted=1), random.Random(6))
    picked = Counter(sampler.parent(island, correct_only=True)[0].id for _ in range(600))
    assert picked == Counter({"a": 600})
    anyone = Counter(sampler.parent(island, "explore")[0].id for _ in range(600))
    assert anyone["bad1"] > 100 and anyone["bad2"] > 100  # repairing operators still see failures
    only_wrong = island_with({"bad": 0.0}, failing=("bad",))
    assert sampler.parent(only_wrong, correct_only=True)[0].id == "bad"  # nothing correct yet: no choice


def test_the_inspirations_count_caps_what_top_n_and_diverse_pick() -> None:
    island = island_with({f"p{i}": float(i + 1) for i in range(8)})
    parent = next(p for p in island.elites() if p.id == "p2")
    sampler = ParentSampler(SamplingConfig(top_n=2, diverse=2), random.Random(8))
    everyone = sampler.inspirations(island, parent)
    assert len(everyone) == 5  # None: all that top_n and diverse pick
    for cap in (0, 1, 3, 5):
        sampler = ParentSampler(SamplingConfig(top_n=2, diverse=2, inspirations=cap), random.Random(8))
        shown = sampler.inspirations(island, parent)
        assert shown == everyone[:cap]  # best first: a cap keeps the island's best, then the top-N
    assert ParentSampler(SamplingConfig(inspirations=0), random.Random(1)).choose(island).inspirations == ()


def test_case_leaders_show_a_size_specialist_the_top_n_would_miss() -> None:
    """A program fastest on the largest case alone, far from the top of the island, is shown beside a
    parent it beats there; a wrong program never leads; a leader slower than the parent on its own case is
    not shown."""
    archive = Archive(ArchiveConfig(islands=1, features=DIMS))
    programs = [
        timed_program("best", {"small": 2.0, "mid": 2.0, "large": 1.0}, created_at=0),
        timed_program("second", {"small": 1.9, "mid": 1.9, "large": 1.0}, created_at=1),
        timed_program("third", {"small": 1.8, "mid": 1.8, "large": 1.0}, created_at=2),
        timed_program("large", {"small": 0.5, "mid": 0.6, "large": 1.3}, created_at=3),  # lowest score
        timed_program("wrong", {"small": 0.1, "mid": 9.0, "large": 9.0}, created_at=4, correct=False),
    ]
    for i, program in enumerate(programs):
        archive.place(program, 0, {"complexity": i + 0.5, "diversity": 0.0})
    island = archive.island(0)
    leaders = island.leaders()
    assert {case: p.id for case, (_, p) in leaders.items()} == {
        "small": "best",
        "mid": "best",
        "large": "large",
    }
    parent = next(p for p in island.elites() if p.id == "third")
    sampler = ParentSampler(SamplingConfig(top_n=1, leaders=1, diverse=0), random.Random(9))
    assert [p.id for p in sampler.inspirations(island, parent)] == ["best", "second", "large"]
    assert [p.id for p in case_leaders(island, parent)] == ["large", "best"]  # 1.3x on large, 1.11x on small
    no_leaders = ParentSampler(SamplingConfig(top_n=1, leaders=0, diverse=0), random.Random(9))
    assert [p.id for p in no_leaders.inspirations(island, parent)] == ["best", "second"]
    # A parent faster than the specialist on its own case is shown no leader for it.
    fast = timed_program("fast", {"small": 1.0, "mid": 1.0, "large": 1.4}, created_at=5)
    archive.place(fast, 0, {"complexity": 5.5, "diversity": 0.0})
    assert "large" not in [p.id for p in case_leaders(island, fast)]
    assert island.leaders()["large"][1].id == "fast"


def test_the_runs_case_leaders_are_the_fastest_of_every_island() -> None:
    """What the run's best meets before the run ends: per case the fastest program on any island, when it
    beats the best there."""
    archive = Archive(ArchiveConfig(islands=2, features=DIMS))
    best = timed_program("best", {"small": 2.0, "large": 1.0}, created_at=0)
    near = timed_program("near", {"small": 1.0, "large": 1.1}, created_at=1)
    far = timed_program("far", {"small": 0.5, "large": 1.3}, created_at=2)
    archive.place(best, 0, {"complexity": 0.5, "diversity": 0.0})
    archive.place(near, 0, {"complexity": 1.5, "diversity": 0.0})
    archive.place(far, 1, {"complexity": 2.5, "diversity": 0.0})
    assert [p.id for p in case_leaders(archive.island(0), best)] == ["near"]
    assert [p.id for p in run_case_leaders(archive.islands, best)] == ["far"]
