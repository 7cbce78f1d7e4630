"""The choices a fusion candidate was written with, recorded in its EVOLVE-BLOCK as one JSON comment line so
that `fusion:variant` regenerates a parent with one of them changed. Only the knobs that differ from their
defaults are written (a short line); `kernelbot integrate` drops the line from the module it ships:

    # fusion-knobs: {"rows": 4, "warps": 0.5}

rows        rows (grid indices of the row atom) per program: the row atom becomes a register axis of ROWS
row_tile    the 2-D tile of ROWS rows at one row a program too (more rows always take it): what bucket
            crossover writes a one-row parent with when its partner takes more rows, so that the two differ
            only in ROWS and ship as one kernel with a launch table (at one row it compiles to the scalar-
            indexed kernel's instructions: EVEN_ROWS folds the row test away); never a search move of its own
inner       "row": the innermost written axis whole in registers; "block": split over the grid in blocks of
            `block`; "auto": block when no op has to see the row whole (pure elementwise), else row
block       elements per program along a blocked inner axis
grid        "outer": only the outermost row axis indexes programs; "all": every row axis does
persistent  0: one program per grid index; N: at most N programs, each looping over grid indices
            (row-invariant loads such as a norm's weight then happen once per program)
warps       scale of num_warps (the base grows with the largest register tile)
small_grid  0: off; N: a launch whose blocked grid would have fewer than N programs splits its blocks to
            SMALL_BLOCK (512) elements, keeping the full block's warps: a decode batch's activation then
            streams from four times as many SMs (on the H200, SiLU-and-mul at 1 to 64 tokens went from
            0.81-0.87x of torch.compile to 0.99-1.10x)
num_warps   0: num_warps from the tile (scaled by `warps`); N: every launch with N warps (Inductor's choice,
            taken over by fusion:inductor)
eviction    streaming loads evict_first, row-invariant loads evict_last
rounding    round 16-bit intermediate results as eager PyTorch does (off: one rounding at the end)
topk        where top-k keeps its candidates: "mask" (register keys rewritten each round), "threshold"
            (read-only keys, each round below the last winner), "twopass" (value then index, no 64-bit keys),
            "bitonic"
passes      "one": a row's reductions see the whole row in registers; "two": the row's innermost axis is
            walked in chunks of `block`, a pre-loop accumulating each sum or maximum, then the loop that
            writes (rows wider than registers hold; only where no top-k, sort or scan spans the axis)
index32     a row-major tensor's offsets in int32, not int64 (the shipped guard keeps every tensor under 2**31
            elements; Inductor indexes so below that). On by default: on the H200, SGLang RMSNorm at 256 x
            7168 went from 1.03x to 1.10x of torch.compile, SiLU-and-mul at 64 x 2048 from 0.98x to 1.01x,
            no case slower
reload      a gather, or a view regrouping a row, of a value the program already holds whole: off, read from
            those registers (`tl.gather`); on, loaded and computed again at the picked positions
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

HEADER = "# fusion-knobs: "
_HEADER = re.compile(r"^# fusion-knobs: (\{.*\})\s*$", re.MULTILINE)
TOPK_METHODS = ("mask", "threshold", "twopass", "bitonic")
PERSISTENT_STEPS = (0, 132, 264, 528, 1056)
SMALL_GRID_STEPS = (0, 32, 128, 512)
WARP_SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)


@dataclass(frozen=True)
class Knobs:
    rows: int = 1
    row_tile: bool = False
    inner: str = "auto"
    block: int = 2048
    grid: str = "outer"
    persistent: int = 0
    warps: float = 1.0
    small_grid: int = 512
    num_warps: int = 0
    eviction: bool = False
    rounding: bool = True
    topk: str = "mask"
    passes: str = "one"
    reload: bool = False
    index32: bool = True

    def __post_init__(self) -> None:
        problems = []
        if self.rows < 1 or self.rows & (self.rows - 1):
            problems.append(f"rows must be a power of two >= 1, not {self.rows}")
        if self.inner not in ("auto", "row", "block"):
            problems.append(f"inner must be auto, row or block, not {self.inner!r}")
        if self.block < 16 or self.block & (self.block - 1):
            problems.append(f"block must be a power of two >= 16, not {self.block}")
        if self.grid not in ("outer", "all"):
            problems.append(f"grid must be outer or all, not {self.grid!r}")
        if self.persistent < 0:
            problems.append("persistent must be >= 0")
        if self.small_grid < 0:
            problems.append("small_grid must be >= 0")
        if self.warps <= 0:
            problems.append("warps must be positive")
        if self.num_warps not in (0, 1, 2, 4, 8, 16, 32):
            problems.append(f"num_warps must be 0 or a power of two up to 32, not {self.num_warps}")
        if self.passes not in ("one", "two"):
            problems.append(f"passes must be one or two, not {self.passes!r}")
        if self.topk not in TOPK_METHODS:
            problems.append(f"topk must be one of {', '.join(TOPK_METHODS)}, not {self.topk!r}")
        if problems:
            raise ValueError("; ".join(problems))

    def header(self) -> str:
        default = Knobs()
        changed = {k: v for k, v in asdict(self).items() if getattr(default, k) != v}
        return HEADER + json.dumps(changed, sort_keys=True)

    def key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def changed(self, other: Knobs) -> str:
        """`name: old -> new` for every knob that differs."""
        return ", ".join(
            f"{f.name}: {getattr(self, f.name)} -> {getattr(other, f.name)}"
            for f in fields(self)
            if getattr(self, f.name) != getattr(other, f.name)
        )


def parse(source: str) -> Knobs | None:
    """The knobs recorded in a candidate, or None when it was not written by the fusion generator."""
    match = _HEADER.search(source)
    if match is None:
        return None
    try:
        data: dict[str, Any] = json.loads(match.group(1))
        known = {f.name for f in fields(Knobs)}
        return Knobs(**{k: v for k, v in data.items() if k in known})
    except (ValueError, TypeError):
        return None


def neighbours(knobs: Knobs, *, uses_topk: bool) -> list[Knobs]:
    """Every knob set that differs from `knobs` in one knob by one step (two passes bring the eviction hints
    with them), most promising moves first."""
    moves: list[Knobs] = []

    def add(**change: Any) -> None:
        try:
            candidate = replace(knobs, **change)
        except ValueError:
            return
        if candidate != knobs and candidate not in moves:
            moves.append(candidate)

    if uses_topk:
        for method in TOPK_METHODS:
            add(topk=method)
        add(reload=not knobs.reload)  # a top-k's picks are what gets gathered
    for rows in (knobs.rows * 2, knobs.rows // 2):
        if 1 <= rows <= 64:
            add(rows=rows)
    add(inner="row" if knobs.inner != "row" else "block")
    add(inner="block" if knobs.inner == "auto" else "auto")
    if knobs.inner != "row":
        for block in (knobs.block * 2, knobs.block // 2):
            if 128 <= block <= 16384:
                add(block=block)
    scale = WARP_SCALES.index(knobs.warps) if knobs.warps in WARP_SCALES else 2
    for step in (scale + 1, scale - 1):
        if 0 <= step < len(WARP_SCALES):
            add(warps=WARP_SCALES[step])
    if knobs.num_warps:  # fixed warps (Inductor's, from fusion:inductor) step as the scale does
        for warps in (knobs.num_warps * 2, knobs.num_warps // 2):
            add(num_warps=warps)
    at = PERSISTENT_STEPS.index(knobs.persistent) if knobs.persistent in PERSISTENT_STEPS else 0
    for step in (at + 1, at - 1):
        if 0 <= step < len(PERSISTENT_STEPS):
            add(persistent=PERSISTENT_STEPS[step])
    at = SMALL_GRID_STEPS.index(knobs.small_grid) if knobs.small_grid in SMALL_GRID_STEPS else 3
    for step in (at + 1, at - 1):
        if 0 <= step < len(SMALL_GRID_STEPS):
            add(small_grid=SMALL_GRID_STEPS[step])
    # Two passes come with the eviction hints that keep the first pass's loads in L2 for the second: without
    # them, on the H200, SGLang RMSNorm's two passes were 0.91-0.97x of torch.compile at 4096 tokens, with
    # them 1.002x (docs/results/2026-12-04-h200-b.md §5); the hints alone stay a move of their own.
    if knobs.passes == "one":
        add(passes="two", eviction=True)
    else:
        add(passes="one")
    add(eviction=not knobs.eviction)
    add(index32=not knobs.index32)
    add(grid="all" if knobs.grid == "outer" else "outer")
    add(rounding=not knobs.rounding)
    if not uses_topk:
        add(reload=not knobs.reload)
    return moves
