"""A MAP-Elites grid: one elite per cell of the feature space, the fittest program seen there.

A program's cell comes from its raw feature values (Program.features) binned along each configured dimension
(evolution.features.bin_index). A newcomer takes an empty cell, or replaces the occupant when strictly fitter;
on a tie the incumbent stays, so the grid's content depends only on the order of placements.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from evolution.config import FeatureDim
from evolution.features import bin_index
from evolution.types import Program

Cell = tuple[int, ...]


def fitness(program: Program) -> tuple[int, float]:
    """Correct-and-clean programs beat every failing one; among equals, the higher score wins."""
    return (1 if program.correct else 0, program.score)


@dataclass(frozen=True)
class Placement:
    cell: Cell
    placed: bool  # the program now occupies `cell`
    displaced: Program | None = None  # the former occupant, when replaced


class Grid:
    def __init__(self, dims: Sequence[FeatureDim]) -> None:
        self.dims = tuple(dims)
        self._cells: dict[Cell, Program] = {}

    def cell_of(self, features: dict[str, float]) -> Cell:
        missing = [d.name for d in self.dims if d.name not in features]
        if missing:
            raise KeyError(f"program has no value for feature(s) {missing}")
        return tuple(bin_index(d, features[d.name]) for d in self.dims)

    def place(self, program: Program) -> Placement:
        cell = self.cell_of(program.features)
        incumbent = self._cells.get(cell)
        if incumbent is not None and incumbent.id == program.id:
            self._cells[cell] = program  # same program again (a re-placement): keep the newest record
            return Placement(cell, placed=True)
        if incumbent is None or fitness(program) > fitness(incumbent):
            self._cells[cell] = program
            return Placement(cell, placed=True, displaced=incumbent)
        return Placement(cell, placed=False)

    def occupant(self, cell: Cell) -> Program | None:
        return self._cells.get(cell)

    def elites(self) -> list[Program]:
        """Occupants in a stable order (by cell)."""
        return [self._cells[c] for c in sorted(self._cells)]

    def cells(self) -> dict[Cell, Program]:
        return dict(self._cells)

    def neighbours(self, cell: Cell, radius: int = 1) -> list[Program]:
        """Occupants of cells within Chebyshev distance `radius` of `cell` (excluded), nearest first."""
        found: list[tuple[int, Cell]] = []
        for offset in itertools.product(range(-radius, radius + 1), repeat=len(cell)):
            if not any(offset):
                continue
            other = tuple(c + o for c, o in zip(cell, offset, strict=True))
            if other in self._cells:
                found.append((max(abs(o) for o in offset), other))
        return [self._cells[c] for _, c in sorted(found)]

    def coverage(self) -> float:
        total = 1
        for d in self.dims:
            total *= d.bins
        return len(self._cells) / total

    def __len__(self) -> int:
        return len(self._cells)

    def __iter__(self) -> Iterator[Program]:
        return iter(self.elites())

    def __contains__(self, program_id: object) -> bool:
        return any(p.id == program_id for p in self._cells.values())
