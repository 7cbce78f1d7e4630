"""Islands: separate MAP-Elites grids that evolve apart and exchange their best by migration.

The Archive is the in-memory population of a run. It is rebuilt from the store's placement log on resume
(placements carry the feature values computed when they happened), so it never needs saving itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from evaluators.result import EvalResult
from evolution.config import ArchiveConfig
from evolution.features import check_feature_names, compute_features
from evolution.grid import Cell, Grid, fitness
from evolution.types import Program, case_speedups


@dataclass(frozen=True)
class PlaceReport:
    island: int
    cell: Cell
    placed: bool
    improved_island_best: bool
    displaced_id: str | None = None


class Island:
    def __init__(self, index: int, config: ArchiveConfig) -> None:
        self.index = index
        self.grid = Grid(config.features)
        self.generation = 0  # evaluations of children bred on this island
        self.best: Program | None = None
        self._program_ids: set[str] = set()  # everything ever placed here, elite or not
        # Case -> (speedup, the correct program fastest on that case): a specialist for one input size may
        # never be the island's best, nor an elite once a fitter program takes its cell, yet a size-keyed
        # crossover or Inductor's launch for that case needs to see it.
        self._leaders: dict[str, tuple[float, Program]] = {}

    def place(self, program: Program) -> PlaceReport:
        outcome = self.grid.place(program)
        self._program_ids.add(program.id)
        improved = self.best is None or fitness(program) > fitness(self.best)
        if improved:
            self.best = program
        if program.correct and program.result is not None:
            for case, speedup in case_speedups(program.result, program.result.regime).items():
                held = self._leaders.get(case)
                if held is None or speedup > held[0]:  # the first to reach a speed keeps the lead on a tie
                    self._leaders[case] = (speedup, program)
        return PlaceReport(
            island=self.index,
            cell=outcome.cell,
            placed=outcome.placed,
            improved_island_best=improved,
            displaced_id=outcome.displaced.id if outcome.displaced else None,
        )

    def has(self, program_id: str) -> bool:
        return program_id in self._program_ids

    def elites(self) -> list[Program]:
        return self.grid.elites()

    def leaders(self) -> dict[str, tuple[float, Program]]:
        """Case -> (speedup, the correct program placed here that is fastest on it), in the task's regime."""
        return dict(self._leaders)

    def top(self, n: int) -> list[Program]:
        """The island's `n` fittest elites (earlier programs first on ties)."""
        ranked = sorted(self.elites(), key=lambda p: (fitness(p), -p.created_at), reverse=True)
        return ranked[:n]

    def __len__(self) -> int:
        return len(self.grid)


class Archive:
    def __init__(self, config: ArchiveConfig) -> None:
        check_feature_names(config.features)
        self.config = config
        self.islands = [Island(i, config) for i in range(config.islands)]
        self.migration_epoch = 0
        self._best: Program | None = None

    # --- placing --------------------------------------------------------------------------------------------

    def features_for(self, source: str, result: EvalResult | None, island: int) -> dict[str, float]:
        """Feature values of a program joining `island` (diversity is measured against its current elites)."""
        elites = self.islands[island].top(self.config.diversity_sample)
        return compute_features(self.config.features, source, result, [p.source for p in elites])

    def place(self, program: Program, island: int, features: dict[str, float] | None = None) -> PlaceReport:
        """Put `program` on `island`; `features` (e.g. from the store on replay) are used when given."""
        if features is None:
            features = self.features_for(program.source, program.result, island)
        placed = replace(program, features=dict(features))
        report = self.islands[island].place(placed)
        if self._best is None or fitness(placed) > fitness(self._best):
            self._best = placed
        return report

    # --- reading --------------------------------------------------------------------------------------------

    @property
    def best(self) -> Program | None:
        return self._best

    def island(self, index: int) -> Island:
        return self.islands[index]

    def size(self) -> int:
        return sum(len(i) for i in self.islands)

    def is_empty(self) -> bool:
        return all(len(i) == 0 for i in self.islands)

    def all_elites(self) -> list[Program]:
        return [p for island in self.islands for p in island.elites()]

    def summary(self) -> list[dict[str, object]]:
        return [
            {
                "island": isl.index,
                "elites": len(isl),
                "generation": isl.generation,
                "coverage": round(isl.grid.coverage(), 4),
                "best": isl.best.id if isl.best else None,
                "best_score": isl.best.score if isl.best else 0.0,
            }
            for isl in self.islands
        ]
