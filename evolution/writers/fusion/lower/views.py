"""View ATen ops, lowered as index remapping: reading a view at an index reads its base at another index
(reshape linearises and splits, expand drops the broadcast dims, slice offsets and strides, permute
reorders, a piece of a split is its base shifted). Nothing is loaded here; the base's own lowering does that.
"""

from __future__ import annotations

import math

import sympy

from evolution.writers.fusion import indexing, symbols
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.evaluate import Evaluator, LoweringTable
from evolution.writers.fusion.lower.args import node_arg, normal_dim, slice_bounds
from evolution.writers.fusion.lower.held import held_row, padded_to_lane_0
from evolution.writers.fusion.model import Node
from evolution.writers.fusion.tiles import Affine, Index, IndexExpr, Tile

LOWERINGS = LoweringTable()


def _sizes(ev: Evaluator, ref: object) -> tuple[list[sympy.Expr], list[int]]:
    return ev.shape(ref), ev.hints(ref)


@LOWERINGS.register(
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.view_copy.default"
)
def _view(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    in_exprs, in_hints = _sizes(ev, source)
    out_exprs = [symbols.parse(s) for s in node.meta.shape]
    out_hints = [ev.hint(e) for e in out_exprs]
    inner = reshape_index(ev, index, out_exprs, out_hints, in_exprs, in_hints)
    held = _held_view(ev, source, inner, guard)
    if held is not None:
        return held
    # Computed in the view's layout, maybe again: where the region holds it in another, `scores_grouped`.
    word = _layout_word(in_exprs, out_exprs)
    if not word:
        return ev.eval(source, inner, guard)
    with ev.emitter.naming_context(word):
        return ev.eval(source, inner, guard)


def _layout_word(before: list[sympy.Expr], after: list[sympy.Expr]) -> str:
    """`grouped` for a view that splits a dim, `flat` for one that merges dims, "" for one that only adds or
    drops dims of size 1 (the same layout)."""
    dims, new_dims = sum(e != 1 for e in before), sum(e != 1 for e in after)
    return "" if new_dims == dims else "grouped" if new_dims > dims else "flat"


def _held_view(ev: Evaluator, source: object, index: Index, guard: Tile | None) -> Tile | None:
    """The view read from registers (`tl.gather`) where the region already holds its base as a row along
    the one dim the view regroups (`scores.view(n, groups, -1)` of scores computed whole): the base is
    loaded and computed once, not again in the view's layout. None otherwise."""
    emitter = ev.emitter
    for dim, entry in enumerate(index):
        if not isinstance(entry, Affine) or len(entry.terms) < 2:
            continue
        others = [e for k, e in enumerate(index) if k != dim]
        if any(not isinstance(e, Affine) or e.atoms - emitter.grid_atoms() for e in others):
            continue  # the base's row is its only register axis
        row = held_row(ev, source, index, dim, guard, avoid=frozenset(entry.atoms))
        if row is None:
            continue
        at = padded_to_lane_0(emitter, emitter.index_tile(entry))
        emitter.name_value(at, "index", 2)
        if len(at.atoms) == 1:
            return emitter.let(f"tl.gather({row.code}, {at.code}, 0)", at.atoms, row.dtype, row.grid)
        # tl.gather takes an index of the source's rank: the positions flattened, the result laid back.
        shape = [emitter.extent_code(a) for a in at.atoms]
        flat = emitter.let(f"tl.reshape({at.code}, [{' * '.join(shape)}])", at.atoms, at.dtype, at.grid)
        emitter.name_value(flat, "index_flat", 2)
        grid = row.grid | at.grid
        gathered = emitter.let(f"tl.gather({row.code}, {flat.code}, 0)", at.atoms, row.dtype, grid)
        emitter.name_value(gathered, "gathered", 2)
        grouped = emitter.let(f"tl.reshape({gathered.code}, [{', '.join(shape)}])", at.atoms, row.dtype, grid)
        label = ev.value_name(source)  # the reference's name for the base: `scores_for_choice_grouped`
        if label.isidentifier():
            emitter.name_value(grouped, f"{label}_grouped", 2)
        return grouped
    return None


def reshape_index(
    ev: Evaluator,
    index: Index,
    out_exprs: list[sympy.Expr],
    out_hints: list[int],
    in_exprs: list[sympy.Expr],
    in_hints: list[int],
) -> Index:
    """The input index of a row-major reshape read at `index` (dims grouped where their products match)."""
    if math.prod(out_hints) != math.prod(in_hints):
        raise LoweringError("internal: a view changes the number of elements")
    result: list[IndexExpr] = [Affine.constant(0)] * len(in_exprs)
    outs = [d for d, h in enumerate(out_hints) if h != 1]
    ins = [d for d, h in enumerate(in_hints) if h != 1]
    i = j = 0
    while i < len(outs) or j < len(ins):
        group_out, group_in = [outs[i]] if i < len(outs) else [], [ins[j]] if j < len(ins) else []
        i, j = i + len(group_out), j + len(group_in)
        prod_out = math.prod(out_hints[d] for d in group_out)
        prod_in = math.prod(in_hints[d] for d in group_in)
        while prod_out != prod_in:
            if prod_out < prod_in and i < len(outs):
                group_out.append(outs[i])
                prod_out *= out_hints[outs[i]]
                i += 1
            elif prod_in < prod_out and j < len(ins):
                group_in.append(ins[j])
                prod_in *= in_hints[ins[j]]
                j += 1
            else:
                raise LoweringError("internal: a view's dims do not group")
        _regroup(ev, index, out_exprs, in_exprs, group_out, group_in, result)
    return tuple(result)


def _regroup(
    ev: Evaluator,
    index: Index,
    out_exprs: list[sympy.Expr],
    in_exprs: list[sympy.Expr],
    group_out: list[int],
    group_in: list[int],
    result: list[IndexExpr],
) -> None:
    emitter = ev.emitter
    if len(group_out) == 1 and len(group_in) == 1:
        result[group_in[0]] = index[group_out[0]]
        return
    linear: IndexExpr = Affine.constant(0)
    for k, dim in enumerate(group_out):
        stride = math.prod((out_exprs[d] for d in group_out[k + 1 :]), start=sympy.Integer(1))
        linear = indexing.add(emitter, linear, indexing.scale(emitter, index[dim], sympy.expand(stride)))
    extents = ev.extents()
    for k, dim in enumerate(group_in):
        stride = sympy.expand(math.prod((in_exprs[d] for d in group_in[k + 1 :]), start=sympy.Integer(1)))
        entry = indexing.floordiv(emitter, linear, stride, extents)
        if k > 0:
            entry = indexing.mod(emitter, entry, in_exprs[dim], extents)
        result[dim] = entry


@LOWERINGS.register("aten.expand.default", "aten.expand_copy.default")
def _expand(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    return ev.eval(node.args[0], ev.broadcast(node.args[0], index), guard)


@LOWERINGS.register("aten.unsqueeze.default", "aten.unsqueeze_copy.default")
def _unsqueeze(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    dim = normal_dim(int(node.args[1]), len(index))
    return ev.eval(node.args[0], index[:dim] + index[dim + 1 :], guard)


@LOWERINGS.register("aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default", "aten.squeeze_copy.dim")
def _squeeze(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    hints = ev.hints(source)
    rank = len(hints)
    if node.target == "aten.squeeze.default":
        dims = [d for d, h in enumerate(hints) if h == 1]
    else:
        raw = node.args[1]
        dims = [normal_dim(int(d), rank) for d in (raw if isinstance(raw, list) else [raw])]
        dims = [d for d in dims if hints[d] == 1]
    entries = iter(index)
    full = [Affine.constant(0) if d in dims else next(entries) for d in range(rank)]
    return ev.eval(source, tuple(full), guard)


@LOWERINGS.register("aten.permute.default", "aten.permute_copy.default")
def _permute(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    order = [normal_dim(int(d), len(index)) for d in node.args[1]]
    source_index: list[IndexExpr] = [Affine.constant(0)] * len(index)
    for out_dim, in_dim in enumerate(order):
        source_index[in_dim] = index[out_dim]
    return ev.eval(node.args[0], tuple(source_index), guard)


@LOWERINGS.register("aten.transpose.int", "aten.t.default")
def _transpose(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    rank = len(index)
    a, b = (0, 1)
    if len(node.args) > 2:
        a, b = normal_dim(int(node.args[1]), rank), normal_dim(int(node.args[2]), rank)
    source_index = list(index)
    source_index[a], source_index[b] = index[b], index[a]
    return ev.eval(node.args[0], tuple(source_index), guard)


@LOWERINGS.register("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    shape = ev.shape(source)
    rank = len(shape)
    dim = normal_dim(int(node.args[1]) if len(node.args) > 1 else 0, rank)
    start, _, step = slice_bounds(
        ev, shape[dim], node_arg(node, 2, "start"), node_arg(node, 3, "end"), node_arg(node, 4, "step", 1)
    )
    entry = indexing.offset(ev.emitter, indexing.scale(ev.emitter, index[dim], step), start)
    return ev.eval(source, (*index[:dim], entry, *index[dim + 1 :]), guard)


@LOWERINGS.register("aten.select.int", "aten.select_copy.int")
def _select(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    shape = ev.shape(source)
    dim = normal_dim(int(node.args[1]), len(shape))
    position = symbols.as_expr(node.args[2])
    if ev.hint(position) < 0:
        position = position + shape[dim]
    return ev.eval(source, (*index[:dim], Affine.constant(position), *index[dim:]), guard)


@LOWERINGS.register("aten.repeat_interleave.self_int")
def _repeat_interleave(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    repeats = symbols.as_expr(node.args[1])
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim")
    if dim is None:
        raise LoweringError("repeat_interleave without a dim (it flattens)")
    dim = normal_dim(int(dim), len(index))
    entry = indexing.floordiv(ev.emitter, index[dim], repeats, ev.extents())
    return ev.eval(source, (*index[:dim], entry, *index[dim + 1 :]), guard)


@LOWERINGS.register("aten.repeat.default")
def _repeat(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    shape = ev.shape(source)
    lead = len(index) - len(shape)
    entries = [
        indexing.mod(ev.emitter, index[lead + d], size, ev.extents())
        if ev.hint(size) != 1
        else Affine.constant(0)
        for d, size in enumerate(shape)
    ]
    return ev.eval(source, tuple(entries), guard)


@LOWERINGS.register("aten.flip.default")
def _flip(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    shape = ev.shape(node.args[0])
    dims = {normal_dim(int(d), len(shape)) for d in node.args[1]}
    entries = tuple(indexing.flip(ev.emitter, e, shape[d]) if d in dims else e for d, e in enumerate(index))
    return ev.eval(node.args[0], entries, guard)


# --- split-like ops: getitem of their outputs --------------------------------------------------------------


_SPLITS = (
    "aten.split.Tensor",
    "aten.split_with_sizes.default",
    "aten.unbind.int",
    "aten.split_with_sizes_copy.default",
)


def _split_piece(ev: Evaluator, node: Node, item: int, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    shape = ev.shape(source)
    if node.target == "aten.unbind.int":
        dim = normal_dim(int(node.args[1]) if len(node.args) > 1 else 0, len(shape))
        return ev.eval(source, (*index[:dim], Affine.constant(item), *index[dim:]), guard)
    dim = normal_dim(int(node.args[2]) if len(node.args) > 2 else 0, len(shape))
    if node.target.startswith("aten.split_with_sizes"):
        sizes = [symbols.as_expr(s) for s in node.args[1]]
    else:
        chunk = symbols.as_expr(node.args[1])
        count = -(-ev.hint(shape[dim]) // ev.hint(chunk))
        sizes = [chunk] * count
    start = sum(sizes[:item], sympy.Integer(0))
    entry = indexing.offset(ev.emitter, index[dim], start)
    return ev.eval(source, (*index[:dim], entry, *index[dim + 1 :]), guard)


@LOWERINGS.register("getitem")
def _getitem(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    """An output of a multi-output op: a piece of a split is a view of its base; any other op (top-k, sort)
    was lowered with all its outputs, read here by position."""
    source, item = node.args[0], int(node.args[1])
    producer = ev.nodes.get(source["node"])
    if producer is not None and producer.target in _SPLITS:
        return _split_piece(ev, producer, item, index, guard)
    return ev.eval({"node": source["node"], "output": item}, index, guard)
