"""Tensors assembled from pieces: cat and stack pick a piece by position, slice_scatter, select_scatter and a
masked index_put pick between the written piece and the base. Each piece is read under a guard of where it
applies, so that masked-off lanes never load out of bounds.
"""

from __future__ import annotations

import sympy

from evolution.writers.fusion import indexing, symbols
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.evaluate import Evaluator, LoweringTable
from evolution.writers.fusion.lower.args import node_arg, normal_dim, slice_bounds
from evolution.writers.fusion.model import Node
from evolution.writers.fusion.tiles import Affine, Index, IndexExpr, Tile

LOWERINGS = LoweringTable()


def _within(ev: Evaluator, entry: IndexExpr, start: sympy.Expr, end: sympy.Expr) -> Tile:
    """The test that `entry` lies in [start, end): `position < end` alone where the lower end cannot fail
    (it is 0 and the index counts up from 0: atoms with non-negative coefficients, a non-negative offset)."""
    position = ev.index_tile(entry)
    from_zero = (
        sympy.sympify(start) == 0
        and isinstance(entry, Affine)
        and all(coef.is_nonnegative for _, coef in entry.terms)
        and bool(entry.const.is_nonnegative)
    )
    above = None
    if not from_zero:
        above = ev.emitter.binary(
            "({a} >= {b})", position, Tile(ev.emitter.params.size(start), (), "i32"), "i1"
        )
    below = ev.emitter.binary("({a} < {b})", position, Tile(ev.emitter.params.size(end), (), "i32"), "i1")
    return below if above is None else ev.emitter.binary("({a} & {b})", above, below, "i1")


@LOWERINGS.register("aten.cat.default")
def _cat(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    pieces = [p for p in node.args[0] if ev.hints(p) and 0 not in ev.hints(p)]
    rank = len(index)
    dim = normal_dim(int(node.args[1]) if len(node.args) > 1 else int(node.kwargs.get("dim", 0)), rank)
    dtype = ev.result_dtype(node)
    start = sympy.Integer(0)
    result: Tile | None = None
    for piece in pieces:
        size = ev.shape(piece)[dim]
        inside = _within(ev, index[dim], start, start + size)
        piece_guard = inside if guard is None else ev.emitter.binary("({a} & {b})", guard, inside, "i1")
        entry = indexing.offset(ev.emitter, index[dim], -start)
        value = ev.emitter.cast(ev.eval(piece, (*index[:dim], entry, *index[dim + 1 :]), piece_guard), dtype)
        result = value if result is None else ev.emitter.where(inside, value, result, dtype)
        start = start + size
    if result is None:
        raise LoweringError("cat of empty tensors")
    return result


@LOWERINGS.register("aten.slice_scatter.default")
def _slice_scatter(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    base, source = node.args[0], node.args[1]
    shape = ev.shape(base)
    rank = len(shape)
    dim = normal_dim(int(node_arg(node, 2, "dim", 0)), rank)
    start, end, step = slice_bounds(
        ev, shape[dim], node_arg(node, 3, "start"), node_arg(node, 4, "end"), node_arg(node, 5, "step", 1)
    )
    dtype = ev.result_dtype(node)
    if ev.hint(start) == 0 and ev.hint(end) == ev.hint(shape[dim]) and step == 1:
        return ev.emitter.cast(ev.eval(source, index, guard), dtype)
    inside = _within(ev, index[dim], start, end)
    entry = indexing.offset(ev.emitter, index[dim], -start)
    if step != 1:
        step_tile = Tile(ev.emitter.params.size(step), (), "i32")
        shifted = ev.emitter.index_tile(entry)
        on_step = ev.emitter.binary("(({a} % {b}) == 0)", shifted, step_tile, "i1")
        inside = ev.emitter.binary("({a} & {b})", inside, on_step, "i1")
        entry = indexing.floordiv(ev.emitter, entry, step, ev.extents())
    source_guard = inside if guard is None else ev.emitter.binary("({a} & {b})", guard, inside, "i1")
    value = ev.emitter.cast(ev.eval(source, (*index[:dim], entry, *index[dim + 1 :]), source_guard), dtype)
    outside = ev.emitter.unary("({a} == 0)", inside, "i1")
    base_guard = outside if guard is None else ev.emitter.binary("({a} & {b})", guard, outside, "i1")
    kept = ev.emitter.cast(ev.eval(base, index, base_guard), dtype)
    return ev.emitter.where(inside, value, kept, dtype)


@LOWERINGS.register("aten.select_scatter.default")
def _select_scatter(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    base, source = node.args[0], node.args[1]
    shape = ev.shape(base)
    dim = normal_dim(int(node.args[2]), len(shape))
    position = symbols.as_expr(node.args[3])
    if ev.hint(position) < 0:
        position = position + shape[dim]
    here = ev.emitter.binary(
        "({a} == {b})", ev.index_tile(index[dim]), Tile(ev.emitter.params.size(position), (), "i32"), "i1"
    )
    dtype = ev.result_dtype(node)
    source_guard = here if guard is None else ev.emitter.binary("({a} & {b})", guard, here, "i1")
    value = ev.emitter.cast(ev.eval(source, index[:dim] + index[dim + 1 :], source_guard), dtype)
    kept = ev.emitter.cast(ev.eval(base, index, guard), dtype)
    return ev.emitter.where(here, value, kept, dtype)


@LOWERINGS.register("aten.stack.default")
def _stack(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    pieces = list(node.args[0])
    rank = len(index)
    dim = normal_dim(int(node.args[1]) if len(node.args) > 1 else int(node.kwargs.get("dim", 0)), rank)
    position = ev.index_tile(index[dim])
    dtype = ev.result_dtype(node)
    rest = index[:dim] + index[dim + 1 :]
    result: Tile | None = None
    for k, piece in enumerate(pieces):
        here = ev.emitter.binary("({a} == {b})", position, ev.emitter.constant(k, "i32"), "i1")
        value = ev.emitter.cast(ev.eval(piece, rest, guard), dtype)
        result = value if result is None else ev.emitter.where(here, value, result, dtype)
    if result is None:
        raise LoweringError("stack of no tensors")
    return result


@LOWERINGS.register("aten.index_put.default")
def _index_put(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    """x[mask] = values with one bool mask over x's leading dims: a select; integer indices would scatter
    through memory, which the generator does not write."""
    source, indices, values = node.args[0], list(node.args[1]), node.args[2]
    accumulate = bool(node.args[3]) if len(node.args) > 3 else bool(node.kwargs.get("accumulate", False))
    if len(indices) != 1 or indices[0] is None or ev.dtype(indices[0]) != "bool":
        raise LoweringError("index_put with integer indices (a scatter through memory)")
    mask_ref = indices[0]
    mask_rank = len(ev.shape(mask_ref))
    if ev.shape(values) not in ([], [sympy.Integer(1)]):
        raise LoweringError("index_put of a tensor of values (its order follows the mask's true elements)")
    dtype = ev.result_dtype(node)
    mask = ev.emitter.cast(
        ev.eval(mask_ref, ev.broadcast(mask_ref, index[:mask_rank], mask_rank), guard), "i1"
    )
    value = ev.emitter.cast(ev.eval(values, ev.broadcast(values, index), guard), dtype)
    kept = ev.emitter.cast(ev.eval(source, index, guard), dtype)
    if accumulate:
        value = ev.emitter.binary("({a} + {b})", kept, value, dtype)
    return ev.emitter.where(mask, value, kept, dtype)
