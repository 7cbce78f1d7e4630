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

from evolution.fusion.emit import Binding, Emitter, KernelParams, LoweringError, Options, Region
from evolution.fusion.evaluate import Evaluator, LoadRecord
from evolution.fusion.knobs import Knobs
from evolution.fusion.model import Graph
from evolution.fusion.stores import Store
from evolution.fusion.tiles import Affine, Atom, AtomTable


class Recorder:
    """Facts of a dry run: atoms spanned whole, reads of inputs."""

    def __init__(self) -> None:
        self.spanned_atoms: set[Atom] = set()
        self.loads: list[LoadRecord] = []

    def spanned(self, atom: Atom) -> None:
        self.spanned_atoms.add(atom)

    def loaded(self, record: LoadRecord) -> None:
        self.loads.append(record)


@dataclass
class StorePlan:
    store: Store
    atoms: list[Atom | None]  # per dim of the written value (None: a dim of size 1)
    spanned: set[Atom] = field(default_factory=set)
    hazards: set[Atom] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)  # placeholders it loads

    @property
    def index(self) -> tuple:
        return tuple(Affine.of(a) if a is not None else Affine.constant(0) for a in self.atoms)

    def rowlike(self) -> list[Atom]:
        return [a for a in self.atoms if a is not None and a not in self.spanned and a not in self.hazards]


@dataclass
class GridAxis:
    atom: Atom
    block: str = ""  # constexpr name of the block when the axis is blocked ("" : one index per program)


@dataclass
class Plan:
    stores: list[StorePlan]
    grid: list[GridAxis]  # outermost first; the innermost varies fastest over program ids
    regions: list[tuple[Region, list[StorePlan]]]


def store_atoms(table: AtomTable, graph: Graph, store: Store) -> list[Atom | None]:
    from evolution.fusion import symbols

    atoms: list[Atom | None] = []
    taken: set[Atom] = set()
    for extent in store.shape:
        hint = symbols.evaluate(extent, graph.hints)
        if hint == 1:
            atoms.append(None)
            continue
        atom = table.get(extent, hint, frozenset(taken))
        taken.add(atom)
        atoms.append(atom)
    return atoms


def dry_run(graph: Graph, stores: list[Store], table: AtomTable, params: KernelParams) -> list[StorePlan]:
    """Evaluate every store with its atoms in registers; refuse (LoweringError) what cannot be lowered."""
    plans = [StorePlan(store, store_atoms(table, graph, store)) for store in stores]
    sources = {p.name: p.source for p in graph.placeholders}
    writers = {sources[name]: None for name, _ in graph.mutations}
    for plan in plans:
        if plan.store.target in writers:
            writers[plan.store.target] = plan
    by_placeholder = {name: writers[sources[name]] for name, _ in graph.mutations}
    for plan in plans:
        recorder = Recorder()
        emitter = Emitter(params, Region(bindings={}), table, itertools.count(), Options())
        Evaluator(graph, emitter, table, recorder).eval(plan.store.value, plan.index)
        plan.spanned = set(recorder.spanned_atoms)
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
                    own = writer.atoms[value_dim]
        for atom in entry.atoms:
            if plain is not atom or atom is not own:
                found.add(atom)
    return found


def plan_grid(plans: list[StorePlan], graph: Graph, knobs: Knobs) -> list[GridAxis]:
    from evolution.fusion import symbols

    if not plans:
        raise LoweringError("the reference writes nothing")

    def size(plan: StorePlan) -> int:
        return math.prod(symbols.evaluate(e, graph.hints) for e in plan.store.shape)

    primary = max(plans, key=size)
    ordered = [a for a in primary.atoms if a is not None]
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
    if grid and knobs.rows > 1:
        grid[-1] = GridAxis(grid[-1].atom, "ROWS")
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


def plan_regions(plans: list[StorePlan], grid: list[GridAxis]) -> list[tuple[Region, list[StorePlan]]]:
    """Group stores by how they bind the grid atoms."""
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
        key = (tuple((id(a), b.kind) for a, b in bindings.items()), tuple(id(a) for a in guarded))
        if key not in groups:
            groups[key] = (Region(bindings=dict(bindings), guarded=tuple(guarded)), [])
        groups[key][1].append(plan)
    return list(groups.values())
