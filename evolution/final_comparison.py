"""The run's last step: the program it would ship timed side by side with its closest challengers, in one
worker, pair by pair (the evaluator's "rival" baseline), and replaced by a challenger that is faster there.

Why: the pick (evolution.winner) is chosen from evaluations made at different times, each a speedup over the
reference as the GPU ran it then. On the H200 a search of SGLang's residual RMSNorm found a kernel 3 % faster
at 4096 tokens (its own median 34.1 µs against the leader's 35.3 µs), crossed it into the leader for that
size, and shipped the leader all the same: the child's speedups on the small cases, which ran the leader's
very code, came out 5-20 % lower in its own evaluation. Two programs timed against each other in one worker
share the GPU's state, the clocks and the inputs of every pair; a 2 % gain on one case shows there.

The challengers are the children of the final crossover (a leader crossed with every case's fastest program)
and at most CHALLENGERS programs that the search's own numbers put ahead of the pick on balance: the
geometric mean, over the pick's cases, of the better of the speedup ratio and the inverse time ratio. A
challenger replaces the pick when, timed against it, it is behind on no case by more than BEHIND and ahead on
some case by at least AHEAD with the interval of that case above 1; of several, the highest geometric mean.
On a case where the pick trails torch.compile (evolution.compile_check), LIFT is enough: the final crossover
built its child for that case, and 1 % with the interval above 1 is a real step toward compile's level.

The decision is kept in the run's store (state FINAL_STATE) with each pair's figures, and holds while the
pick it was made against is still the run's pick: a resumed run that finds another one compares again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evaluators.result import EvalResult
from evaluators.stats import geometric_mean
from evolution.types import Program, case_speedups, case_times
from evolution.winner import TIE

FINAL_STATE = "final_comparison"
CHALLENGERS = 2  # besides the final crossover's children: each is one more evaluation at the run's end
AHEAD = TIE  # a gain on one case worth the challenger's code, where the search's numbers could not tell
# A loss this small is the comparison's own noise: on the H200 a crossover child's small cases, running the
# pick's very code, came out within 1.1 % of it, and programs alike within 1.3 %.
BEHIND = 0.015
LIFT = 0.01  # ahead by this on a case the pick trails torch.compile on (MIN_GAIN of the crossover)


@dataclass(frozen=True)
class Duel:
    """One challenger timed against the pick (or against torch.compile: evolution.compile_check): per case,
    the pick's time over the challenger's (> 1: the challenger is faster) and the ends of its interval;
    `reason` says why there are no figures."""

    challenger: str  # program id
    speedups: dict[str, float]
    ci_low: dict[str, float]
    reason: str = ""
    ci_high: dict[str, float] = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        """The geometric mean over the cases (None without figures)."""
        return geometric_mean(list(self.speedups.values())) if self.speedups else None

    def beats(self, behind_compile: Sequence[str] = ()) -> bool:
        """Behind on no case beyond BEHIND, ahead on one by AHEAD or more with its interval above 1 (by LIFT
        on a case of `behind_compile`, where the pick trails torch.compile)."""
        if not self.speedups or any(s < 1.0 - BEHIND for s in self.speedups.values()):
            return False
        return any(
            s >= 1.0 + (LIFT if case in behind_compile else AHEAD) and self.ci_low.get(case, 0.0) > 1.0
            for case, s in self.speedups.items()
        )


def duel(challenger: Program, result: EvalResult, regime: str) -> Duel:
    """The figures of `challenger`'s evaluation against the pick (TimingConfig baseline "rival"), or
    against another baseline it was timed against."""
    if not (result.passed and result.correct):
        return Duel(challenger.id, {}, {}, reason=result.reason or "not timed")
    speedups = case_speedups(result, regime)
    timed = [case for case in result.cases if case.name in speedups]
    lows = {case.name: case.timings[regime].ci_low for case in timed}
    highs = {case.name: case.timings[regime].ci_high for case in timed}
    return Duel(challenger.id, speedups, lows, reason="" if speedups else "no case timed", ci_high=highs)


def challengers(programs: Sequence[Program], pick: Program, final_iteration: int | None) -> list[Program]:
    """Who is timed against `pick`: the final crossover's children (their iteration is `final_iteration`),
    then up to CHALLENGERS others ahead of it on balance in the search's own figures. None where the pick
    carries no per-case timings (a backend that never times)."""
    assert pick.result is not None
    regime = pick.result.regime
    pick_speedups, pick_times = case_speedups(pick.result, regime), case_times(pick.result, regime)
    if not pick_speedups:
        return []
    kept = [
        p
        for p in programs
        if p.id != pick.id and p.result is not None and p.correct and not p.result.quarantined
    ]
    chosen = [p for p in kept if final_iteration is not None and p.iteration == final_iteration]

    def edge(program: Program) -> float:
        speedups, times = case_speedups(program.result, regime), case_times(program.result, regime)
        better = []
        for case, best in pick_speedups.items():
            ratios = [speedups[case] / best] if case in speedups else []
            if case in times and case in pick_times:
                ratios.append(pick_times[case] / times[case])
            if not ratios:
                return 0.0  # not timed where the pick was: not comparable
            better.append(max(ratios))
        return geometric_mean(better)

    ahead = sorted(((edge(p), p) for p in kept if p not in chosen), key=lambda pair: -pair[0])
    chosen += [p for e, p in ahead[:CHALLENGERS] if e > 1.0]
    return chosen


def settle(pick: Program, duels: Sequence[Duel], behind_compile: Sequence[str] = ()) -> str:
    """The id of the program the run ships: the best challenger that beats the pick, else the pick."""
    beaten = [d for d in duels if d.beats(behind_compile)]
    if not beaten:
        return pick.id
    return max(beaten, key=lambda d: d.speedup or 0.0).challenger


def record(pick: Program, duels: Sequence[Duel], winner: str) -> dict[str, Any]:
    """What the store keeps (JSON): the pick compared against, the winner, each pair's figures."""
    return {"pick": pick.id, "winner": winner, "duels": [asdict(d) for d in duels]}


def compared_winner(
    pick: Program | None, programs: Sequence[Program], kept: dict[str, Any] | None
) -> Program | None:
    """The run's winner: the challenger a final comparison against `pick` chose, else `pick` itself."""
    if pick is None or not kept or kept.get("pick") != pick.id:
        return pick
    winner = kept.get("winner")
    return next((p for p in programs if p.id == winner), pick)


def deciding_comparison(winner: Program | None, kept: dict[str, Any] | None) -> dict[str, Any] | None:
    """The kept comparison when it decided `winner` (the run's winner now), else None."""
    return kept if winner is not None and kept and kept.get("winner") == winner.id else None
