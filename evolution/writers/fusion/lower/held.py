"""Reading a value the program already holds in registers instead of loading and computing it again: the
row a gather or a regrouping view reads (`tl.gather`), shared by lower.gather and lower.views. The `reload`
knob turns it off, so a search times both forms."""

from __future__ import annotations

from evolution.writers.fusion.emit import Emitter
from evolution.writers.fusion.evaluate import Evaluator
from evolution.writers.fusion.tiles import Affine, Atom, Index, Tile


def held_row(
    ev: Evaluator,
    source: object,
    index: Index,
    dim: int,
    guard: Tile | None,
    *,
    rest: tuple[Atom, ...] = (),
    avoid: frozenset[Atom] = frozenset(),
) -> Tile | None:
    """`source` as the region already holds it along the whole of `dim` (a register atom of that extent,
    none of `avoid`), laid out as `rest` then that atom; None where the region does not hold it, or where
    the reload knob is on."""
    if ev.recorder is not None:  # the row analysis keeps such a kernel's rows 1-D at one row a program
        ev.recorder.regroups = True
    if ev.emitter.options.reload:
        return None
    extent = ev.shape(source)[dim]
    for atom in ev.atoms.atoms:
        if atom.extent != extent or atom in avoid or ev.emitter.binding(atom).kind != "register":
            continue
        row = ev.held(source, (*index[:dim], Affine.of(atom), *index[dim + 1 :]), guard)
        if row is not None and row.atoms == (*rest, atom):
            return row
    return None


def padded_to_lane_0(emitter: Emitter, positions: Tile) -> Tile:
    """`positions` with its padded lanes (which hold no position) reading lane 0: tl.gather has no mask."""
    valid = emitter.mask(set(positions.atoms))
    if valid is None:
        return positions
    return emitter.where(valid, positions, emitter.constant(0, positions.dtype), positions.dtype)
