"""The stop rule of a confirmation: how many fresh processes a claim needs, and what may be claimed.

Each fresh process measures one speedup per case, regime and baseline column (the baseline's time over the
kernel's, medians of interleaved pairs inside that process). Those per-process figures scatter more from
process to process than inside one (where inputs land in memory, clocks, the CUDA context), so a claim is
bounded over processes, never inside one: on the log-speedups x_1..x_n of n processes,

    pooled = exp(mean x)                                           (the geometric mean over processes)
    bound  = exp(mean x - t(c, n-1) * sd(x) * sqrt(1 + 1/n))       (one-sided prediction bound)

i.e. the speedup a further fresh process is expected to reach with probability c: the claim a PR prints must
be true in the reader's process too, so the spread between processes is part of it, not only the uncertainty
of the mean. sd(x) is never taken below the regime's floor (StopRule.graph_spread_floor, wall_spread_floor): a
confirmation's processes run together under one set of conditions and agree with each other more closely than
with a process started elsewhere. The upper bound mirrors it. A cell is decided once n >= min_processes and
the lower bound lies above 1 ("faster") or the upper bound below 1 ("not faster"); processes are added until
every cell of a column is decided or `max_processes` were measured, and a cell still open then is "not shown".
(In the spirit of GPU MODE's standard-error rule and nvbench's noise-based stopping: sample until the figure
is precise enough for what is promised, not for a fixed count.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evaluators.stats import mean, stdev
from kernelbot.verify.stats import t_quantile

FASTER = "faster"
NOT_FASTER = "not faster"
NOT_SHOWN = "not shown"
UNDECIDED = "undecided"  # more processes would be measured (never a final verdict)
VERDICTS = (FASTER, NOT_FASTER, NOT_SHOWN)


@dataclass(frozen=True)
class StopRule:
    """When to stop adding processes (`kernelbot target --confirm-processes`, `kernelbot scan` too)."""

    min_processes: int = 3
    max_processes: int = 10
    confidence: float = 0.975  # one-sided: a further process reaches the bound with this probability
    # The least cross-process spread (sd of the log-speedups, about the CV) a bound assumes, per regime. On
    # the H200 a batch of 10 further processes sat 1-4 % off a confirmation whose own 6 processes agreed
    # within 0.2 %; the floors are the cross-process CVs real kernels' speedups showed over 10 processes
    # (median of each winner and column: graph 0.2-2.1 %, wall 1.7-4.6 %; docs/benchmarks.md).
    graph_spread_floor: float = 0.01
    wall_spread_floor: float = 0.03

    def spread_floor(self, regime: str) -> float:
        """The floor of `regime` (the larger one for a regime the rule does not know)."""
        floors = {"graph": self.graph_spread_floor, "wall": self.wall_spread_floor}
        return floors.get(regime, max(floors.values()))

    def __post_init__(self) -> None:
        if self.min_processes < 2:
            raise ValueError(
                f"min_processes must be at least 2 (a spread needs two), not {self.min_processes}"
            )
        if self.max_processes < self.min_processes:
            raise ValueError(
                f"max_processes ({self.max_processes}) is below min_processes ({self.min_processes})"
            )
        if not 0.5 < self.confidence < 1.0:
            raise ValueError(f"confidence must lie in (0.5, 1), not {self.confidence}")
        if not (0.0 <= self.graph_spread_floor < 1.0 and 0.0 <= self.wall_spread_floor < 1.0):
            raise ValueError("spread floors must lie in [0, 1)")


@dataclass(frozen=True)
class CellEstimate:
    """One case, regime and column over n processes (speedups are baseline time / kernel time)."""

    speedups: tuple[float, ...]  # one per process, in measuring order
    pooled: float  # geometric mean over processes
    lower: float  # one-sided prediction bound below (the claim), see the module docstring
    upper: float
    cv: float  # coefficient of variation of the per-process speedups (cross-process spread)
    verdict: str  # FASTER | NOT_FASTER | NOT_SHOWN | UNDECIDED

    @property
    def processes(self) -> int:
        return len(self.speedups)


def estimate(speedups: Sequence[float], rule: StopRule, *, regime: str) -> CellEstimate:
    """The pooled figure, both bounds, the CV and the verdict of one cell of `regime` after len(speedups)
    processes."""
    values = tuple(float(s) for s in speedups)
    if not values:
        raise ValueError("no per-process speedup to estimate from")
    if any(not math.isfinite(s) or s <= 0.0 for s in values):
        raise ValueError(f"speedups must be positive and finite, got {values}")
    logs = [math.log(s) for s in values]
    n = len(values)
    centre = mean(logs)
    if n < 2:
        lower = upper = math.nan
        cv = math.nan
    else:
        sd = max(stdev(logs), rule.spread_floor(regime))
        spread = t_quantile(rule.confidence, n - 1) * sd * math.sqrt(1.0 + 1.0 / n)
        lower, upper = math.exp(centre - spread), math.exp(centre + spread)
        avg = mean(values)
        cv = stdev(values) / avg if avg else math.nan
    return CellEstimate(
        speedups=values,
        pooled=math.exp(centre),
        lower=lower,
        upper=upper,
        cv=cv,
        verdict=verdict(n, lower, upper, rule),
    )


def verdict(n: int, lower: float, upper: float, rule: StopRule) -> str:
    """FASTER / NOT_FASTER once the bounds decide (from min_processes on), NOT_SHOWN at the cap, else
    UNDECIDED."""
    if n >= rule.min_processes:
        if lower > 1.0:
            return FASTER
        if upper < 1.0:
            return NOT_FASTER
    if n >= rule.max_processes:
        return NOT_SHOWN
    return UNDECIDED


def all_decided(cells: Iterable[CellEstimate]) -> bool:
    """True when no cell asks for another process (the column is done)."""
    return all(c.verdict != UNDECIDED for c in cells)


def final(cell: CellEstimate) -> CellEstimate:
    """A cell at the end of the confirmation: one still open (the column stopped for its other cells, or
    a process failed) is "not shown"."""
    if cell.verdict != UNDECIDED:
        return cell
    return CellEstimate(cell.speedups, cell.pooled, cell.lower, cell.upper, cell.cv, NOT_SHOWN)
