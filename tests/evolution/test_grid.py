from __future__ import annotations

import math

from evaluators.result import EvalResult, Stage
from evolution.config import FeatureDim
from evolution.features import bin_index
from evolution.grid import Grid, fitness
from evolution.types import Program

DIMS = (
    FeatureDim("complexity", bins=4, low=0.0, high=400.0),
    FeatureDim("diversity", bins=2, low=0.0, high=1.0),
)


def prog(pid: str, score: float, complexity: float, diversity: float, correct: bool = True) -> Program:
    result = EvalResult("t", pid, "fake", "wall", Stage.TIMING, correct, correct=correct, score=score)
    return Program(
        pid, "src", pid, None, "op", 0, 0, result, {"complexity": complexity, "diversity": diversity}
    )


def test_bins_linear_log_and_out_of_range() -> None:
    lin = FeatureDim("x", bins=4, low=0.0, high=4.0)
    assert [bin_index(lin, v) for v in (-1.0, 0.0, 0.99, 1.0, 2.5, 3.99, 4.0, 100.0)] == [
        0,
        0,
        0,
        1,
        2,
        3,
        3,
        3,
    ]
    assert bin_index(lin, math.nan) == 0
    log = FeatureDim("x", bins=3, low=10.0, high=1000.0, scale="log")
    # equal ratios, equal bins: [10, 46), [46, 215), [215, 1000]
    assert [bin_index(log, v) for v in (1.0, 10.0, 40.0, 50.0, 200.0, 300.0, 5000.0)] == [0, 0, 0, 1, 1, 2, 2]


def test_place_fills_distinct_cells() -> None:
    grid = Grid(DIMS)
    a = grid.place(prog("a", 1.0, 50, 0.2))
    b = grid.place(prog("b", 1.0, 150, 0.2))
    c = grid.place(prog("c", 1.0, 150, 0.8))
    assert (a.cell, b.cell, c.cell) == ((0, 0), (1, 0), (1, 1))
    assert all(p.placed for p in (a, b, c))
    assert len(grid) == 3
    assert grid.coverage() == 3 / 8


def test_fitter_program_replaces_occupant_and_ties_keep_incumbent() -> None:
    grid = Grid(DIMS)
    grid.place(prog("a", 1.2, 50, 0.2))
    worse = grid.place(prog("b", 1.1, 60, 0.3))
    assert not worse.placed and grid.occupant((0, 0)).id == "a"
    tie = grid.place(prog("c", 1.2, 70, 0.1))
    assert not tie.placed and grid.occupant((0, 0)).id == "a"
    better = grid.place(prog("d", 1.5, 90, 0.4))
    assert better.placed and better.displaced.id == "a"
    assert grid.occupant((0, 0)).id == "d"


def test_correct_program_beats_any_failing_one() -> None:
    grid = Grid(DIMS)
    grid.place(prog("bad", 0.0, 50, 0.2, correct=False))
    assert grid.occupant((0, 0)).id == "bad"  # an empty cell takes even a failing program
    grid.place(prog("good", 0.5, 50, 0.2))
    assert grid.occupant((0, 0)).id == "good"
    assert not grid.place(prog("bad2", 0.0, 50, 0.2, correct=False)).placed
    assert fitness(prog("x", 0.1, 0, 0)) > fitness(prog("y", 9.0, 0, 0, correct=False))


def test_neighbours_nearest_first_excluding_cell() -> None:
    grid = Grid(
        (FeatureDim("complexity", bins=5, low=0, high=5), FeatureDim("diversity", bins=5, low=0, high=5))
    )
    for pid, (x, y) in {"c": (2, 2), "n1": (3, 2), "n2": (4, 4), "far": (0, 4)}.items():
        grid.place(prog(pid, 1.0, x + 0.5, y + 0.5))
    assert [p.id for p in grid.neighbours((2, 2), radius=1)] == ["n1"]
    # nearest first; equal distances in cell order
    assert [p.id for p in grid.neighbours((2, 2), radius=2)] == ["n1", "far", "n2"]
    assert "c" not in {p.id for p in grid.neighbours((2, 2), radius=2)}
