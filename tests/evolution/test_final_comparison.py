"""The run's last step: the pick timed side by side with its challengers, and replaced by one faster there."""

from __future__ import annotations

import dataclasses

from test_winner import kernel_source, measured

from evaluators.result import EvalResult, Stage
from evolution.final_comparison import (
    AHEAD,
    BEHIND,
    CHALLENGERS,
    LIFT,
    Duel,
    challengers,
    compared_winner,
    duel,
    record,
    settle,
)

# SGLang's residual RMSNorm as a search on the H200 saw it (reference µs, kernel µs): the leader, and the
# final crossover's child running the leader's code on the small cases and a two-pass kernel at 4096 tokens
# (34.1 µs against 35.3 µs); the child's evaluation timed the reference faster on the small cases.
LEADER = {"t1": (9.0, 4.0), "t256": (12.0, 5.0), "t4096": (36.0, 35.25)}
CHILD = {"t1": (7.6, 4.0), "t256": (11.0, 5.0), "t4096": (36.3, 34.08)}
# The leader's code once more, its evaluation as noisy as the child's: ahead nowhere.
NOISY_COPY = {"t1": (8.0, 4.0), "t256": (11.5, 5.0), "t4096": (35.0, 35.25)}


def test_the_final_children_and_the_programs_ahead_on_balance_challenge_the_pick() -> None:
    leader = measured("leader", kernel_source(1), LEADER)
    child = measured("child", kernel_source(2), CHILD)
    copy = measured("copy", kernel_source(1), NOISY_COPY)
    assert child.score < leader.score and copy.score < leader.score  # the leader first in the search ...
    ahead = challengers([leader, child, copy], leader, None)
    assert [p.id for p in ahead] == ["child"]  # ... and only the child ahead on some case
    final = dataclasses.replace(copy, id="final", iteration=7)
    assert [p.id for p in challengers([leader, child, final], leader, 7)] == ["final", "child"]
    wrong = measured("wrong", kernel_source(2), CHILD, correct=False)
    flagged = dataclasses.replace(child, id="flagged")
    assert flagged.result is not None
    flagged = dataclasses.replace(flagged, result=dataclasses.replace(flagged.result, quarantined=True))
    assert challengers([leader, wrong, flagged], leader, None) == []
    faster = [
        measured(f"f{i}", kernel_source(2), {**CHILD, "t4096": (36.3, 34.0 - i)})
        for i in range(CHALLENGERS + 2)
    ]
    picked = challengers([leader, *faster], leader, None)
    assert [p.id for p in picked] == [f"f{i}" for i in reversed(range(2, CHALLENGERS + 2))]


def test_a_pick_without_per_case_timings_has_no_challengers() -> None:
    untimed = EvalResult("t", "u", "triton-interpret", "graph", Stage.TIMING, True, correct=True, score=1.0)
    pick = dataclasses.replace(measured("pick", kernel_source(1), LEADER), result=untimed)
    assert challengers([pick, measured("child", kernel_source(2), CHILD)], pick, None) == []


def test_a_challenger_faster_on_one_case_side_by_side_replaces_the_pick() -> None:
    leader = measured("leader", kernel_source(1), LEADER)
    # Timed against the leader in one worker (reference: the leader's times), the child is the leader on
    # the small cases and 3 % faster at 4096 tokens.
    side_by_side = measured(
        "child", kernel_source(2), {"t1": (4.0, 3.99), "t256": (5.0, 5.02), "t4096": (35.1, 34.0)}
    )
    assert side_by_side.result is not None
    found = duel(side_by_side, side_by_side.result, "graph")
    assert found.beats() and found.speedup is not None and 1.0 < found.speedup < 1.02
    assert settle(leader, [found]) == "child"
    kept = record(leader, [found], "child")
    programs = [leader, side_by_side]
    assert compared_winner(leader, programs, kept) is side_by_side
    # Kept against another pick (a resumed run found a new one): it says nothing about this one.
    other = measured("other", kernel_source(1), LEADER)
    assert compared_winner(other, [*programs, other], kept) is other
    assert compared_winner(leader, programs, None) is leader


def test_a_challenger_behind_anywhere_or_not_clearly_ahead_leaves_the_pick() -> None:
    leader = measured("leader", kernel_source(1), LEADER)
    ahead = 1.0 + AHEAD + 0.01

    def against(speedups: dict[str, float], lows: dict[str, float] | None = None) -> Duel:
        return Duel("child", speedups, lows or {case: s * 0.99 for case, s in speedups.items()})

    behind = against({"t1": 1.0 - BEHIND - 0.005, "t256": 1.0, "t4096": 1.10})
    barely = against({"t1": 1.0, "t256": 1.0, "t4096": 1.0 + AHEAD / 2})
    unsure = against({"t1": 1.0, "t256": 1.0, "t4096": ahead}, {"t1": 0.99, "t256": 0.99, "t4096": 0.995})
    assert not any(d.beats() for d in (behind, barely, unsure))
    assert settle(leader, [behind, barely, unsure]) == "leader"
    better = against({"t1": 1.0, "t256": 1.0, "t4096": ahead})
    best = Duel("best", {"t1": 1.0, "t256": 1.0, "t4096": ahead + 0.05}, {"t4096": ahead})
    assert settle(leader, [better, best]) == "best"


def test_on_a_case_the_pick_trails_torch_compile_on_a_smaller_clear_gain_is_enough() -> None:
    """1.5 % ahead at 1 token with the interval above 1: under AHEAD, so the pick stays; where the pick
    trails torch.compile at 1 token (the final crossover built the child for it), LIFT is enough. Not so
    where the pick trails compile on another case, or with the interval reaching 1."""
    leader = measured("leader", kernel_source(1), LEADER)
    lift = 1.0 + (LIFT + AHEAD) / 2
    speedups = {"t1": lift, "t256": 1.0, "t4096": 0.995}
    child = Duel("child", speedups, {"t1": 1.004, "t256": 0.99, "t4096": 0.99})
    unsure = Duel("unsure", {"t1": lift, "t256": 1.0}, {"t1": 0.999, "t256": 0.99})
    assert not child.beats() and settle(leader, [child]) == "leader"
    assert child.beats(("t1",)) and settle(leader, [child, unsure], ("t1",)) == "child"
    assert not child.beats(("t4096",)) and not unsure.beats(("t1",))


def test_a_comparison_that_did_not_time_has_no_say() -> None:
    child = measured("child", kernel_source(2), CHILD)
    failed = EvalResult(
        "t", "c", "triton-cuda", "graph", Stage.TIMING, False, reason="baseline unavailable: the rival ..."
    )
    found = duel(child, failed, "graph")
    assert found.speedups == {} and found.reason.startswith("baseline unavailable") and not found.beats()
    assert found.speedup is None
