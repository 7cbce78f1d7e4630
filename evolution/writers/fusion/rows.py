"""Row analysis: which atoms of the stores become the program grid and which stay in registers.

Every store is first evaluated in a dry run with all its atoms in registers, recording which atoms an op had
to see whole (a reduction, scan, top-k, sort or scatter runs over them: they must stay in registers) and
which atoms index a read of an input the kernel also writes at another position (a program would read what
another already overwrote). The remaining atoms of the largest store are the rows: the outermost one (or all
of them, by the `grid` knob) indexes the programs, optionally `rows` at a time, and the innermost one is kept
whole in registers or split into blocks of the grid (`inner`). A store that lacks a grid atom, or must see it
whole (a prefix sum over the batch), runs in the programs where that index is 0.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import sympy

from evolution.writers.fusion.emit import Emitter, Options
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.evaluate import Evaluator, LoadRecord
from evolution.writers.fusion.knobs import Knobs
from evolution.writers.fusion.lower import LOWERINGS
from evolution.writers.fusion.model import Graph
from evolution.writers.fusion.params import KernelParams
from evolution.writers.fusion.region import ROWS_BLOCK, Binding, Region
from evolution.writers.fusion.stores import Store
from evolution.writers.fusion.tiles import Affine, Atom, AtomTable


class Recorder:
    """Facts of a dry run: atoms spanned whole, reads of inputs."""

    def __init__(self) -> None:
        self.spanned_atoms: set[Atom] = set()
        self.selected: set[Atom] = set()  # spanned by an op that needs the axis whole in registers
        self.ranks = False  # a top-k or a sort spans an atom
        self.regroups = False  # a gather or a regrouping view would read a row it holds (lower.held)
        self.loads: list[LoadRecord] = []

    def spanned(self, atom: Atom, kind: str = "select") -> None:
        self.spanned_atoms.add(atom)
        if kind != "reduce":
            self.selected.add(atom)
        if kind == "rank":
            self.ranks = True

    def loaded(self, record: LoadRecord) -> None:
        self.loads.append(record)


@dataclass
class StorePlan:
    store: Store
    entries: list[Affine]  # per dim of the written value: its index over the store's atoms
    spanned: set[Atom] = field(default_factory=set)
    selected: set[Atom] = field(default_factory=set)  # spanned by top-k, sort, scan or scatter
    ranks: bool = False  # a top-k or a sort spans an atom
    regroups: bool = False  # a gather or a regrouping view reads a row (in registers unless `reload`)
    hazards: set[Atom] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)  # placeholders it loads

    @property
    def index(self) -> tuple:
        return tuple(self.entries)

    @property
    def atoms(self) -> list[Atom]:
        """The store's atoms, outermost first (a dim split by a view elsewhere contributes one per part)."""
        return [atom for entry in self.entries for atom, _ in entry.terms]

    def rowlike(self) -> list[Atom]:
        return [a for a in self.atoms if a not in self.spanned and a not in self.hazards]


@dataclass
class GridAxis:
    atom: Atom
    block: str = ""  # constexpr name of the block when the axis is blocked ("" : one index per program)

    @property
    def rows(self) -> bool:
        """Blocked in a program's tile of rows (ROWS_BLOCK)."""
        return self.block == ROWS_BLOCK


@dataclass
class Plan:
    stores: list[StorePlan]
    grid: list[GridAxis]  # outermost first; the innermost varies fastest over program ids
    regions: list[tuple[Region, list[StorePlan]]]


def plan_loop(plans: list[StorePlan], grid: list[GridAxis], graph: Graph, knobs: Knobs) -> Atom | None:
    """Two passes: the largest store's innermost atom, when only sums and maxima span it, is walked in
    chunks of BLOCK (a pre-loop accumulates each reduction, the main loop writes) instead of held whole."""
    from evolution.writers.fusion import symbols

    if knobs.passes != "two":
        return None
    primary = max(plans, key=lambda p: math.prod(symbols.evaluate(e, graph.hints) for e in p.store.shape))
    atoms = primary.atoms
    if not atoms:
        return None
    inner = atoms[-1]
    in_grid = any(axis.atom is inner for axis in grid)
    if in_grid or inner not in primary.spanned or any(inner in p.selected for p in plans):
        raise LoweringError("two passes need the row's innermost axis spanned by sums or maxima only")
    return inner


def store_atoms(table: AtomTable, graph: Graph, store: Store, factors: dict[str, list]) -> list[Affine]:
    """The index of every dim of the stored value. A dim whose extent a view of the graph splits (heads
    times head size) gets one atom per part, so reads through that view stay contiguous along the last."""
    from evolution.writers.fusion import symbols

    entries: list[Affine] = []
    taken: set[Atom] = set()
    for extent in store.shape:
        hint = symbols.evaluate(extent, graph.hints)
        if hint == 1:
            entries.append(Affine.constant(0))
            continue
        parts = factors.get(str(extent), [extent])
        entry = Affine.constant(0)
        for k, part in enumerate(parts):
            atom = table.get(part, symbols.evaluate(part, graph.hints), frozenset(taken))
            taken.add(atom)
            stride = sympy.Integer(1)
            for later in parts[k + 1 :]:
                stride = stride * later
            entry = entry.plus(Affine.of(atom).scaled(sympy.expand(stride)))
        entries.append(entry)
    return entries


def view_factors(graph: Graph) -> dict[str, list]:
    """Extents a view splits into parts (or merges from them): extent text -> the parts' extents."""
    import math

    from evolution.writers.fusion import symbols

    views = ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
    nodes = {n.name: n for n in graph.nodes}
    metas = {p.name: p.meta for p in graph.placeholders if p.meta is not None}
    found: dict[str, list] = {}
    conflicting: set[str] = set()
    for node in graph.nodes:
        source = node.args[0] if node.args else None
        if node.target not in views or not isinstance(source, dict) or "node" not in source:
            continue
        name = source["node"]
        meta = metas.get(name) or (
            nodes[name].outputs[int(source.get("output", 0))] if name in nodes else None
        )
        if meta is None:
            continue
        sides = [[symbols.parse(s) for s in meta.shape], [symbols.parse(s) for s in node.meta.shape]]
        hints = [[symbols.evaluate(e, graph.hints) for e in side] for side in sides]
        kept = [
            [(e, h) for e, h in zip(side, hs, strict=True) if h != 1]
            for side, hs in zip(sides, hints, strict=True)
        ]
        i = j = 0
        a, b = kept
        while i < len(a) and j < len(b):
            group_a, group_b = [a[i]], [b[j]]
            i, j = i + 1, j + 1
            while math.prod(h for _, h in group_a) != math.prod(h for _, h in group_b):
                if math.prod(h for _, h in group_a) < math.prod(h for _, h in group_b) and i < len(a):
                    group_a.append(a[i])
                    i += 1
                elif j < len(b):
                    group_b.append(b[j])
                    j += 1
                else:
                    break
            for single, many in ((group_a, group_b), (group_b, group_a)):
                if len(single) == 1 and len(many) > 1:
                    key = str(single[0][0])
                    parts = [e for e, _ in many]
                    if key in found and found[key] != parts:
                        conflicting.add(key)
                    found.setdefault(key, parts)
    return {k: v for k, v in found.items() if k not in conflicting}


def dry_run(graph: Graph, stores: list[Store], table: AtomTable, params: KernelParams) -> list[StorePlan]:
    """Evaluate every store with its atoms in registers; refuse (LoweringError) what cannot be lowered."""
    factors = view_factors(graph)
    plans = [StorePlan(store, store_atoms(table, graph, store, factors)) for store in stores]
    sources = {p.name: p.source for p in graph.placeholders}
    writers: dict[str, StorePlan | None] = {sources[name]: None for name, _ in graph.mutations}
    for plan in plans:
        if plan.store.target in writers:
            writers[plan.store.target] = plan
    by_placeholder = {name: writers[sources[name]] for name, _ in graph.mutations}
    for plan in plans:
        recorder = Recorder()
        emitter = Emitter(params, Region(bindings={}), table, itertools.count(), Options())
        Evaluator(graph, emitter, table, LOWERINGS, recorder).eval(plan.store.value, plan.index)
        plan.spanned = set(recorder.spanned_atoms)
        plan.selected = set(recorder.selected)
        plan.ranks = recorder.ranks
        plan.regroups = recorder.regroups
        plan.reads = {r.placeholder for r in recorder.loads}
        for record in recorder.loads:
            if record.placeholder in by_placeholder:
                writer = by_placeholder[record.placeholder]
                plan.hazards |= _hazards(record, writer)
    return plans


def _hazards(record: LoadRecord, writer: StorePlan | None) -> set[Atom]:
    """Atoms that index a read of an input the kernel writes anywhere but at the element the same program
    writes (a plain atom at the same dim, written from offset 0 with step 1)."""
    found: set[Atom] = set()
    for position, entry in enumerate(record.index):
        plain = entry.atom if isinstance(entry, Affine) else None
        own = None
        if writer is not None:
            for value_dim, (target_dim, start, step) in enumerate(writer.store.placement):
                if target_dim == position and start == 0 and step == 1:
                    own = writer.entries[value_dim].atom
        for atom in entry.atoms:
            if plain is not atom or atom is not own:
                found.add(atom)
    return found


def plan_grid(plans: list[StorePlan], graph: Graph, knobs: Knobs) -> list[GridAxis]:
    from evolution.writers.fusion import symbols

    if not plans:
        raise LoweringError("the reference writes nothing")

    def size(plan: StorePlan) -> int:
        return math.prod(symbols.evaluate(e, graph.hints) for e in plan.store.shape)

    primary = max(plans, key=size)
    ordered = primary.atoms
    rowlike = primary.rowlike()
    grid: list[GridAxis] = []
    inner = ordered[-1] if ordered else None
    inner_mode = knobs.inner
    if inner_mode == "auto":
        inner_mode = "block" if not primary.spanned else "row"
    blocked_inner = inner_mode == "block" and inner is not None and inner in rowlike
    scalar = [a for a in rowlike if a is not inner]
    if knobs.grid == "outer":
        scalar = scalar[:1]
    for atom in scalar:
        grid.append(GridAxis(atom))
    # A top-k or sort keeps the 2-D tile of `ROWS` rows even at one row a program: its building blocks take a
    # tile of rows, and one kernel text for every `rows` lets a crossover of two row counts ship one kernel
    # and a launch table instead of two kernels that differ in one constant (so does `row_tile`, for any
    # kernel). Not where a gather regroups a row the program holds: tl.gather reads it from registers only
    # as a row of its own (lower.held).
    regroups = any(plan.regroups for plan in plans)
    ranked = any(plan.ranks for plan in plans) and not regroups
    if grid and (knobs.rows > 1 or ranked or (knobs.row_tile and not regroups)):
        grid[-1] = GridAxis(grid[-1].atom, ROWS_BLOCK)
    if blocked_inner and inner is not None:
        grid.append(GridAxis(inner, f"BLOCK_{inner.name.upper()}"))
    return grid


def check_cross_reads(graph: Graph, regions: list[tuple[Region, list[StorePlan]]]) -> None:
    """A store in one region must not read an input a store of another region writes in place: the regions
    run one after the other, so it would see new values where the reference reads old ones."""
    sources = {p.name: p.source for p in graph.placeholders}
    writer_region = {
        plan.store.target: k
        for k, (_, members) in enumerate(regions)
        for plan in members
        if not plan.store.fresh
    }
    for k, (_, members) in enumerate(regions):
        for plan in members:
            for name in plan.reads:
                other = writer_region.get(sources.get(name, ""))
                if other is not None and other != k:
                    raise LoweringError(
                        f"the reference reads {sources[name]} while it also writes it in place from another "
                        "part of the computation (the kernel would read values already overwritten)"
                    )


def plan_regions(
    plans: list[StorePlan], grid: list[GridAxis], loop: Atom | None = None
) -> list[tuple[Region, list[StorePlan]]]:
    """Group stores by how they bind the grid atoms (and the looped atom, in every region)."""
    groups: dict[tuple, tuple[Region, list[StorePlan]]] = {}
    for plan in plans:
        rowlike = set(plan.rowlike())
        bindings: dict[Atom, Binding] = {}
        guarded: list[Atom] = []
        for axis in grid:
            if axis.atom in rowlike:
                bindings[axis.atom] = Binding("block", axis.block) if axis.block else Binding("grid")
            else:
                guarded.append(axis.atom)
        if loop is not None:
            bindings[loop] = Binding("loop", f"BLOCK_{loop.name.upper()}")
        key = (tuple((id(a), b.kind) for a, b in bindings.items()), tuple(id(a) for a in guarded))
        if key not in groups:
            groups[key] = (Region(bindings=dict(bindings), guarded=tuple(guarded)), [])
        groups[key][1].append(plan)
    return list(groups.values())
