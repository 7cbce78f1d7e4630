"""Which program a run ships: its fittest, or a much shorter program tied with the fittest on every case.

The fittest is the highest score (the geometric-mean speedup in the task's regime) among correct, unflagged,
unquarantined programs. Speedups from different evaluations carry the noise of what else ran on the GPU
then: on the H200, searches sharing the GPU put a MoE router's three-kernel crossover child 7 % above its
one-kernel parent in score while the child's own times were slower than the parent's on every case (the
reference, 45 µs of small launches, slowed more than a 3.5 µs kernel). What a pull request carries is the
winner's code, and a reviewer reads three kernels where one is as fast.

So the winner is the shortest program, at most SHORTER of the fittest's lines, that is tied with the fittest
on every case the fittest was timed on: within TIE of its speedup or of its own median time there (either
measure: where the two disagree, the gap is the evaluations' noise, not the code's). Without such a program,
or where results carry no per-case timings (backends that never time), the fittest is the winner.
"""

from __future__ import annotations

from collections.abc import Iterable

from evolution.features import line_count
from evolution.grid import fitness
from evolution.types import Program, case_speedups, case_times

# Two programs this close on a case are one speed: less than the spread of one kernel's medians between
# evaluations on a GPU shared by other work.
TIE = 0.02
# A program is simpler when it has at most this share of the other's lines: a second kernel, a dispatcher, a
# second top-k, not a renamed temporary.
SHORTER = 0.75


def run_winner(programs: Iterable[Program]) -> Program | None:
    """The program a run ships, among `programs` (None when none is correct, unflagged and kept)."""
    kept = [p for p in programs if p.result is not None and p.correct and not p.result.quarantined]
    if not kept:
        return None
    fittest = max(kept, key=fitness)
    lines = {p.id: line_count(p.source) for p in kept}
    tied = [p for p in kept if lines[p.id] <= SHORTER * lines[fittest.id] and tied_with(p, fittest)]
    if not tied:
        return fittest
    return min(tied, key=lambda p: (lines[p.id], -p.score))


def tied_with(program: Program, fittest: Program) -> bool:
    """`program` is within TIE of `fittest` on every case `fittest` was timed on, in speedup or in its own
    median time, in the regime of `fittest`'s result; False when `fittest` has no per-case timings."""
    assert fittest.result is not None
    regime = fittest.result.regime
    best_speedups, speedups = case_speedups(fittest.result, regime), case_speedups(program.result, regime)
    best_times, times = case_times(fittest.result, regime), case_times(program.result, regime)
    if not best_speedups:
        return False
    for case, best in best_speedups.items():
        close_in_speedup = case in speedups and speedups[case] >= best * (1.0 - TIE)
        close_in_time = case in times and case in best_times and times[case] <= best_times[case] * (1.0 + TIE)
        if not (close_in_speedup or close_in_time):
            return False
    return True
