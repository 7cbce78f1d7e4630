"""Ring migration: every K generations each island sends copies of its best to the next island.

The plan is made for all islands before any copy lands, so a migrant travels one hop per epoch (island 0's
best reaches island 1, not island 2 in the same step). Only correct programs travel, and never to an island
that has already held them. A migrant keeps its id: it is the same evaluated program, placed once more.
"""

from __future__ import annotations

from dataclasses import dataclass

from evolution.islands import Archive, PlaceReport
from evolution.types import Program


@dataclass(frozen=True)
class Migrant:
    program: Program
    source: int
    target: int


@dataclass(frozen=True)
class Landed:
    migrant: Migrant
    features: dict[str, float]
    report: PlaceReport


def due_epoch(evaluations: int, islands: int, interval: int) -> int:
    """The migration epoch a run is in after `evaluations` bred children: one epoch per K generations."""
    return evaluations // (interval * islands)


def plan_ring(archive: Archive, migrants: int) -> list[Migrant]:
    islands = archive.islands
    if len(islands) < 2 or migrants < 1:
        return []
    plan = []
    for island in islands:
        target = islands[(island.index + 1) % len(islands)]
        for program in island.top(migrants):
            if program.correct and not target.has(program.id):
                plan.append(Migrant(program, island.index, target.index))
    return plan


def migrate(archive: Archive, plan: list[Migrant]) -> list[Landed]:
    """Place every planned migrant on its target island; returns what landed (for the store's log)."""
    landed = []
    for m in plan:
        features = archive.features_for(m.program.source, m.program.result, m.target)
        report = archive.place(m.program, m.target, features)
        landed.append(Landed(m, features, report))
    return landed
