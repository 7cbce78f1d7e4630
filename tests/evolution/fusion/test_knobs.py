"""Knob sets: the header line round-trips, bad values are refused, and the neighbours of a knob set each
change exactly one knob, never repeat, and include the top-k methods only for kernels that select."""

from __future__ import annotations

from dataclasses import fields

import pytest

from evolution.writers.fusion.knobs import HEADER, TOPK_METHODS, Knobs, neighbours, parse


def test_header_round_trips_inside_a_source() -> None:
    knobs = Knobs(rows=4, inner="row", persistent=264, warps=0.5, eviction=True, topk="bitonic")
    source = f"import torch\n# EVOLVE-BLOCK-START\n{knobs.header()}\nROWS = 4\n# EVOLVE-BLOCK-END\n"
    assert parse(source) == knobs
    assert parse("import torch\n") is None
    assert parse(f"{HEADER}{{not json\n") is None
    assert parse(HEADER + '{"rows": 3}\n') is None  # not a power of two: not a knob set the generator wrote


@pytest.mark.parametrize(
    "change",
    [
        {"rows": 0},
        {"rows": 3},
        {"inner": "wide"},
        {"block": 100},
        {"grid": "some"},
        {"warps": 0},
        {"small_grid": -1},
        {"topk": "x"},
    ],
)
def test_invalid_knobs_are_refused(change: dict) -> None:
    with pytest.raises(ValueError):
        Knobs(**change)


def _differences(a: Knobs, b: Knobs) -> list[str]:
    return [f.name for f in fields(Knobs) if getattr(a, f.name) != getattr(b, f.name)]


@pytest.mark.parametrize(
    "start", [Knobs(), Knobs(rows=64, inner="block", block=16384, warps=4.0, persistent=1056)]
)
def test_neighbours_change_one_knob_each_and_never_repeat(start: Knobs) -> None:
    moves = neighbours(start, uses_topk=True)
    assert len(moves) == len(set(moves)) and start not in moves
    for move in moves:
        changed = _differences(start, move)
        # Two passes bring the eviction hints with them (the first pass's loads kept in L2 for the second).
        assert len(changed) == 1 or changed == ["eviction", "passes"], start.changed(move)
    assert Knobs(passes="two", eviction=True) in neighbours(Knobs(), uses_topk=False)
    assert {m.topk for m in moves if m.topk != start.topk} == set(TOPK_METHODS) - {start.topk}
    assert all(m.topk == start.topk for m in neighbours(start, uses_topk=False))


def test_moves_stay_in_range() -> None:
    far = Knobs(rows=64, block=16384, warps=4.0, persistent=1056, inner="block")
    moves = neighbours(far, uses_topk=False)
    assert max(m.rows for m in moves) == 64 and max(m.block for m in moves) == 16384
    assert max(m.warps for m in moves) == 4.0 and max(m.persistent for m in moves) == 1056


def test_fixed_warps_step_to_their_neighbours() -> None:
    """Inductor's warps (set by fusion:inductor) are one step from twice and half as many: its looped norm
    at 8 warps is two moves from the 16-warp, 4096-chunk kernel that matched compile at 4096 tokens."""
    assert {m.num_warps for m in neighbours(Knobs(num_warps=8), uses_topk=False)} >= {4, 16}
    assert 64 not in {m.num_warps for m in neighbours(Knobs(num_warps=32), uses_topk=False)}
    assert {m.num_warps for m in neighbours(Knobs(), uses_topk=False)} == {0}  # from the tile: no move
