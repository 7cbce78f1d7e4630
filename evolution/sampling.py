"""Choosing what to mutate: a parent from an island (explore / exploit / fitness-weighted), and the
inspirations shown beside it (the island's best, its top-N, the leaders of single cases where they beat the
parent, and elites of neighbouring cells).

- explore: uniform over the island's occupied cells (spreads effort over the feature space);
- exploit: uniform among the island's `exploit_top` fittest (refines what works);
- weighted: roulette over all elites, weight = score (+ a small floor so failing programs keep a chance).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from evolution.config import SamplingConfig
from evolution.grid import fitness
from evolution.islands import Island
from evolution.types import Program, case_speedups

MODES = ("explore", "exploit", "weighted")
WEIGHT_FLOOR = 0.05  # weight of a failing program relative to a correct score of 1.0


@dataclass(frozen=True)
class Choice:
    parent: Program
    mode: str
    inspirations: tuple[Program, ...]


class ParentSampler:
    def __init__(self, config: SamplingConfig, rng: random.Random) -> None:
        self.config = config
        self.rng = rng
        self._ratios = (config.explore, config.exploit, config.weighted)

    def mode(self) -> str:
        return self.rng.choices(MODES, weights=self._ratios)[0]

    def parent(
        self,
        island: Island,
        mode: str | None = None,
        *,
        correct_only: bool = False,
        eligible: Callable[[Program], bool] | None = None,
    ) -> tuple[Program, str]:
        """`correct_only`: for operators that cannot repair a wrong kernel (launch tuning), choose among the
        island's correct elites (all of them when it has none yet). `eligible`: only elites it accepts (the
        controller leaves out parents an operator has nothing new for)."""
        elites = island.elites()
        if eligible is not None:
            elites = [p for p in elites if eligible(p)]
        if not elites:
            raise ValueError(f"island {island.index} has no eligible parent")
        if correct_only and any(p.correct for p in elites):
            elites = [p for p in elites if p.correct]
        mode = mode or self.mode()
        if mode == "explore":
            return self.rng.choice(elites), mode
        if mode == "exploit":
            ranked = sorted(elites, key=lambda p: (fitness(p), -p.created_at), reverse=True)
            return self.rng.choice(ranked[: self.config.exploit_top]), mode
        weights = [weight(p) for p in elites]
        return self.rng.choices(elites, weights=weights)[0], mode

    def inspirations(self, island: Island, parent: Program) -> tuple[Program, ...]:
        """The island's best, its top_n next best, the `leaders` programs fastest on a case where they lead
        the parent by the most, then the diverse best of neighbouring cells (never the parent), at most
        `inspirations` of them."""
        cap = self.config.inspirations
        if cap == 0:
            return ()
        chosen: dict[str, Program] = {}

        def add(p: Program | None) -> None:
            if p is not None and p.id != parent.id and p.id not in chosen:
                chosen[p.id] = p

        add(island.best)
        for p in island.top(self.config.top_n + 2):
            if len(chosen) >= 1 + self.config.top_n:
                break
            add(p)
        for p in case_leaders(island, parent, exclude=set(chosen))[: self.config.leaders]:
            add(p)
        if self.config.diverse and parent.features:
            try:
                cell = island.grid.cell_of(parent.features)
            except KeyError:
                cell = None
            if cell is not None:
                near = [p for p in island.grid.neighbours(cell, radius=2) if p.id not in chosen]
                near.sort(key=lambda p: fitness(p), reverse=True)
                for p in near[: self.config.diverse]:
                    add(p)
        return tuple(chosen.values())[:cap]

    def choose(
        self,
        island: Island,
        *,
        correct_only: bool = False,
        eligible: Callable[[Program], bool] | None = None,
    ) -> Choice:
        parent, mode = self.parent(island, correct_only=correct_only, eligible=eligible)
        return Choice(parent, mode, self.inspirations(island, parent))


def weight(program: Program) -> float:
    return max(program.score, 0.0) + WEIGHT_FLOOR if program.correct else WEIGHT_FLOOR


def case_leaders(island: Island, parent: Program, exclude: Collection[str] = ()) -> list[Program]:
    """The island's case leaders other than `parent` and `exclude`d ids that are faster than the parent on a
    case they lead, the largest lead first (a case the parent was not timed on counts as led by any
    margin)."""
    return _leading(island.leaders(), parent, exclude)


def run_case_leaders(islands: Iterable[Island], parent: Program) -> list[Program]:
    """As case_leaders, over every island: per case the fastest program of the run."""
    fastest: dict[str, tuple[float, Program]] = {}
    for island in islands:
        for case, (speedup, program) in island.leaders().items():
            if case not in fastest or speedup > fastest[case][0]:
                fastest[case] = (speedup, program)
    return _leading(fastest, parent, ())


def _leading(
    leaders: dict[str, tuple[float, Program]], parent: Program, exclude: Collection[str]
) -> list[Program]:
    mine = case_speedups(parent.result, parent.result.regime) if parent.result is not None else {}
    leads: dict[str, tuple[float, Program]] = {}
    for case, (speedup, program) in leaders.items():
        if program.id == parent.id or program.id in exclude:
            continue
        lead = speedup / mine[case] if case in mine else math.inf
        if lead > 1.0 and lead > leads.get(program.id, (0.0, program))[0]:
            leads[program.id] = (lead, program)
    ranked = sorted(leads.values(), key=lambda lp: (-lp[0], lp[1].created_at))
    return [program for _, program in ranked]
