"""Gathers: gather, index_select, embedding and advanced indexing read their base at an index computed from
data (a load through memory), never materialising the index tensor.
"""

from __future__ import annotations

import sympy

from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.evaluate import Evaluator, LoweringTable
from evolution.writers.fusion.lower.args import normal_dim
from evolution.writers.fusion.lower.held import held_row, padded_to_lane_0
from evolution.writers.fusion.model import Node
from evolution.writers.fusion.tiles import Affine, Computed, Index, IndexExpr, Tile

LOWERINGS = LoweringTable()


def data_index(ev: Evaluator, tile: Tile, size: sympy.Expr | None = None) -> Computed:
    """An index read from data; with `size`, negative values count from the end (advanced indexing)."""
    if tile.dtype not in ("i32", "i64"):
        tile = ev.emitter.cast(tile, "i32")
    if size is not None:
        bound = Tile(ev.emitter.params.size(size), (), tile.dtype)
        named = ev.emitter.hints.get(tile.code)
        # `i + tl.where(i < 0, n, 0)` rather than `tl.where(i < 0, i + n, i)`: as many operations, and a line
        # that fits where the select of a sum and the index is broken over three
        tile = ev.emitter.binary("{a} + tl.where({a} < 0, {b}, 0)", tile, bound, tile.dtype)
        # The same indices, negative ones counted from the end: they keep the name they were loaded as
        # (`req_pool_indices = req_pool_indices + tl.where(...)`).
        priority, base = named if named is not None and named[0] >= 3 else (2, "index")
        ev.emitter.name_value(tile, base, priority)
    return Computed(tile)


def _at(ev: Evaluator, positions: object) -> str:
    """The word for values read at a gather's positions: `at_topk_ids` after the reference's name for them."""
    label = ev.value_name(positions)
    return f"at_{label}" if label.isidentifier() else "gathered"


@LOWERINGS.register("aten.gather.default")
def _gather(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source, dim, positions = node.args[0], int(node.args[1]), node.args[2]
    dim = normal_dim(dim, len(index))
    at = ev.eval(positions, index, guard)
    held = _held_along(ev, source, index, dim, at, guard)
    if held is not None:
        return held
    picked = data_index(ev, at)
    with ev.emitter.naming_context(_at(ev, positions)):
        return ev.eval(source, (*index[:dim], picked, *index[dim + 1 :]), guard)


def _held_along(
    ev: Evaluator, source: object, index: Index, dim: int, at: Tile, guard: Tile | None
) -> Tile | None:
    """The gather read from registers (`tl.gather`) where the region already holds the source along the
    whole of `dim` (`scores.gather(1, topk_ids)` after a top-k of the scores): no second load of the
    source, nor its ops computed again at the picked positions. None where it does not, or where the tiles
    are not laid out alike but for the gathered axis (last in both)."""
    entry = index[dim]
    if at.dtype not in ("i32", "i64") or not at.atoms or not isinstance(entry, Affine):
        return None
    if entry != Affine.of(at.atoms[-1]):
        return None
    rest = at.atoms[:-1]
    row = held_row(ev, source, index, dim, guard, rest=rest, avoid=frozenset(at.atoms))
    if row is None:
        return None
    at = ev.emitter.unwidened(at)  # tl.gather takes any int index: no 64-bit copy of the positions
    picked = padded_to_lane_0(ev.emitter, at)
    if picked is not at:
        ev.emitter.name_value(picked, "index", 2)
    code = f"tl.gather({row.code}, {picked.code}, {len(rest)})"
    return ev.emitter.let(code, picked.atoms, row.dtype, row.grid | picked.grid)


@LOWERINGS.register("aten.index_select.default")
def _index_select(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source, dim, positions = node.args[0], int(node.args[1]), node.args[2]
    dim = normal_dim(dim, len(index))
    picked = data_index(ev, ev.eval(positions, (index[dim],), guard), ev.shape(source)[dim])
    with ev.emitter.naming_context(_at(ev, positions)):
        return ev.eval(source, (*index[:dim], picked, *index[dim + 1 :]), guard)


@LOWERINGS.register("aten.embedding.default")
def _embedding(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    weight, positions = node.args[0], node.args[1]
    rank = len(ev.shape(positions))
    picked = data_index(ev, ev.eval(positions, index[:rank], guard))
    with ev.emitter.naming_context(_at(ev, positions)):
        return ev.eval(weight, (picked, index[rank]), guard)


@LOWERINGS.register("aten.index.Tensor")
def _index(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    """Advanced indexing x[i0, i1, ...] with index tensors (None keeps a dim)."""
    source, indices = node.args[0], list(node.args[1])
    shape = ev.shape(source)
    indices += [None] * (len(shape) - len(indices))
    used = [d for d, t in enumerate(indices) if t is not None]
    for d in used:
        if ev.dtype(indices[d]) == "bool":
            raise LoweringError("indexing with a bool mask (its result size depends on the data)")
    broadcast_rank = max(len(ev.shape(indices[d])) for d in used)
    adjacent = used == list(range(used[0], used[-1] + 1))
    lead = used[0] if adjacent else 0
    picked_index = index[lead : lead + broadcast_rank]
    rest = iter(index[:lead] + index[lead + broadcast_rank :])
    source_index: list[IndexExpr] = []
    for d in range(len(shape)):
        if indices[d] is None:
            source_index.append(next(rest))
            continue
        positions = indices[d]
        local = ev.broadcast(positions, picked_index, broadcast_rank)
        source_index.append(data_index(ev, ev.eval(positions, local, guard), shape[d]))
    return ev.eval(source, tuple(source_index), guard)
