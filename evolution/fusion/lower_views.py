"""View and indexing ATen ops, lowered as index remapping: reading a view at an index reads its base at
another index (reshape linearises and splits, expand drops the broadcast dims, slice offsets and strides,
permute reorders). Scatter-like views (slice_scatter, cat) read each piece under a guard so that masked-off
lanes never load out of bounds; gathers (gather, index_select, advanced indexing) read their base at an index
computed from data.
"""

from __future__ import annotations

import math

import sympy

from evolution.fusion import indexing, symbols
from evolution.fusion.emit import LoweringError
from evolution.fusion.evaluate import Evaluator, lowering
from evolution.fusion.model import Node
from evolution.fusion.tiles import Affine, Computed, Index, IndexExpr, Tile

_END = 2**62  # ATen spells "to the end" as a huge int (9223372036854775807)


def _dim(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def _sizes(ev: Evaluator, ref: object) -> tuple[list[sympy.Expr], list[int]]:
    return ev.shape(ref), ev.hints(ref)


@lowering("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.view_copy.default")
def _view(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    in_exprs, in_hints = _sizes(ev, source)
    out_exprs = [symbols.parse(s) for s in node.meta.shape]
    out_hints = [ev.hint(e) for e in out_exprs]
    return ev.eval(source, reshape_index(ev, index, out_exprs, out_hints, in_exprs, in_hints), guard)


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


@lowering("aten.expand.default", "aten.expand_copy.default")
def _expand(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    return ev.eval(node.args[0], ev.broadcast(node.args[0], index), guard)


@lowering("aten.unsqueeze.default", "aten.unsqueeze_copy.default")
def _unsqueeze(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    dim = _dim(int(node.args[1]), len(index))
    return ev.eval(node.args[0], index[:dim] + index[dim + 1 :], guard)


@lowering("aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default", "aten.squeeze_copy.dim")
def _squeeze(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    hints = ev.hints(source)
    rank = len(hints)
    if node.target == "aten.squeeze.default":
        dims = [d for d, h in enumerate(hints) if h == 1]
    else:
        raw = node.args[1]
        dims = [_dim(int(d), rank) for d in (raw if isinstance(raw, list) else [raw])]
        dims = [d for d in dims if hints[d] == 1]
    entries = iter(index)
    full = [Affine.constant(0) if d in dims else next(entries) for d in range(rank)]
    return ev.eval(source, tuple(full), guard)


@lowering("aten.permute.default", "aten.permute_copy.default")
def _permute(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    order = [_dim(int(d), len(index)) for d in node.args[1]]
    source_index: list[IndexExpr] = [Affine.constant(0)] * len(index)
    for out_dim, in_dim in enumerate(order):
        source_index[in_dim] = index[out_dim]
    return ev.eval(node.args[0], tuple(source_index), guard)


@lowering("aten.transpose.int", "aten.t.default")
def _transpose(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    rank = len(index)
    a, b = (_dim(int(node.args[1]), rank), _dim(int(node.args[2]), rank)) if len(node.args) > 2 else (0, 1)
    source_index = list(index)
    source_index[a], source_index[b] = index[b], index[a]
    return ev.eval(node.args[0], tuple(source_index), guard)


def slice_bounds(ev: Evaluator, size: sympy.Expr, start: object, end: object, step: object) -> tuple:
    """Normalised (start, end, step) size expressions of a slice over a dim of `size`."""
    size_hint = ev.hint(size)

    def bound(value: object, default: sympy.Expr) -> sympy.Expr:
        if value is None:
            return default
        expr = symbols.as_expr(value)
        hint = ev.hint(expr)
        if hint >= _END:
            return size
        if hint < 0:
            expr, hint = expr + size, hint + size_hint
        return size if hint > size_hint else expr

    return bound(start, sympy.Integer(0)), bound(end, size), symbols.as_expr(step if step is not None else 1)


@lowering("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    shape = ev.shape(source)
    rank = len(shape)
    dim = _dim(int(node.args[1]) if len(node.args) > 1 else 0, rank)
    start, _, step = slice_bounds(
        ev, shape[dim], _arg(node, 2, "start"), _arg(node, 3, "end"), _arg(node, 4, "step", 1)
    )
    entry = indexing.offset(ev.emitter, indexing.scale(ev.emitter, index[dim], step), start)
    return ev.eval(source, (*index[:dim], entry, *index[dim + 1 :]), guard)


def _arg(node: Node, position: int, name: str, default: object = None) -> object:
    if len(node.args) > position:
        return node.args[position]
    return node.kwargs.get(name, default)


@lowering("aten.select.int", "aten.select_copy.int")
def _select(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    shape = ev.shape(source)
    dim = _dim(int(node.args[1]), len(shape))
    position = symbols.as_expr(node.args[2])
    if ev.hint(position) < 0:
        position = position + shape[dim]
    return ev.eval(source, (*index[:dim], Affine.constant(position), *index[dim:]), guard)


@lowering("aten.repeat_interleave.self_int")
def _repeat_interleave(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    repeats = symbols.as_expr(node.args[1])
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim")
    if dim is None:
        raise LoweringError("repeat_interleave without a dim (it flattens)")
    dim = _dim(int(dim), len(index))
    entry = indexing.floordiv(ev.emitter, index[dim], repeats, ev.extents())
    return ev.eval(source, (*index[:dim], entry, *index[dim + 1 :]), guard)


@lowering("aten.repeat.default")
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


@lowering("aten.flip.default")
def _flip(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    shape = ev.shape(node.args[0])
    dims = {_dim(int(d), len(shape)) for d in node.args[1]}
    entries = tuple(indexing.flip(ev.emitter, e, shape[d]) if d in dims else e for d, e in enumerate(index))
    return ev.eval(node.args[0], entries, guard)


@lowering("aten.cat.default")
def _cat(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    pieces = [p for p in node.args[0] if ev.hints(p) and 0 not in ev.hints(p)]
    rank = len(index)
    dim = _dim(int(node.args[1]) if len(node.args) > 1 else int(node.kwargs.get("dim", 0)), rank)
    position = ev.index_tile(index[dim])
    dtype = ev.result_dtype(node)
    start = sympy.Integer(0)
    result: Tile | None = None
    for piece in pieces:
        size = ev.shape(piece)[dim]
        lo = Tile(ev.emitter.params.size(start), (), "i32")
        hi = Tile(ev.emitter.params.size(start + size), (), "i32")
        inside = ev.emitter.binary("({a} >= {b})", position, lo, "i1")
        inside = ev.emitter.binary(
            "({a} & {b})", inside, ev.emitter.binary("({a} < {b})", position, hi, "i1"), "i1"
        )
        piece_guard = inside if guard is None else ev.emitter.binary("({a} & {b})", guard, inside, "i1")
        entry = indexing.offset(ev.emitter, index[dim], -start)
        value = ev.emitter.cast(ev.eval(piece, (*index[:dim], entry, *index[dim + 1 :]), piece_guard), dtype)
        result = value if result is None else ev.emitter.where(inside, value, result, dtype)
        start = start + size
    if result is None:
        raise LoweringError("cat of empty tensors")
    return result


@lowering("aten.slice_scatter.default")
def _slice_scatter(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    base, source = node.args[0], node.args[1]
    shape = ev.shape(base)
    rank = len(shape)
    dim = _dim(int(_arg(node, 2, "dim", 0)), rank)  # type: ignore[arg-type]
    start, end, step = slice_bounds(
        ev, shape[dim], _arg(node, 3, "start"), _arg(node, 4, "end"), _arg(node, 5, "step", 1)
    )
    dtype = ev.result_dtype(node)
    if ev.hint(start) == 0 and ev.hint(end) == ev.hint(shape[dim]) and step == 1:
        return ev.emitter.cast(ev.eval(source, index, guard), dtype)
    position = ev.index_tile(index[dim])
    inside = ev.emitter.binary("({a} >= {b})", position, Tile(ev.emitter.params.size(start), (), "i32"), "i1")
    below = ev.emitter.binary("({a} < {b})", position, Tile(ev.emitter.params.size(end), (), "i32"), "i1")
    inside = ev.emitter.binary("({a} & {b})", inside, below, "i1")
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


@lowering("aten.select_scatter.default")
def _select_scatter(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    base, source = node.args[0], node.args[1]
    shape = ev.shape(base)
    dim = _dim(int(node.args[2]), len(shape))
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


# --- gathers -----------------------------------------------------------------------------------------------


def data_index(ev: Evaluator, tile: Tile, size: sympy.Expr | None = None) -> Computed:
    """An index read from data; with `size`, negative values count from the end (advanced indexing)."""
    if tile.dtype not in ("i32", "i64"):
        tile = ev.emitter.cast(tile, "i32")
    if size is not None:
        bound = Tile(ev.emitter.params.size(size), (), tile.dtype)
        tile = ev.emitter.binary("tl.where({a} < 0, {a} + {b}, {a})", tile, bound, tile.dtype)
    return Computed(tile)


@lowering("aten.gather.default")
def _gather(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source, dim, positions = node.args[0], int(node.args[1]), node.args[2]
    dim = _dim(dim, len(index))
    picked = data_index(ev, ev.eval(positions, index, guard))
    return ev.eval(source, (*index[:dim], picked, *index[dim + 1 :]), guard)


@lowering("aten.index_select.default")
def _index_select(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source, dim, positions = node.args[0], int(node.args[1]), node.args[2]
    dim = _dim(dim, len(index))
    picked = data_index(ev, ev.eval(positions, (index[dim],), guard), ev.shape(source)[dim])
    return ev.eval(source, (*index[:dim], picked, *index[dim + 1 :]), guard)


@lowering("aten.embedding.default")
def _embedding(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    weight, positions = node.args[0], node.args[1]
    rank = len(ev.shape(positions))
    picked = data_index(ev, ev.eval(positions, index[:rank], guard))
    return ev.eval(weight, (picked, index[rank]), guard)


@lowering("aten.index.Tensor")
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


# --- split-like ops: getitem of their outputs --------------------------------------------------------------


def split_piece(ev: Evaluator, node: Node, item: int, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    shape = ev.shape(source)
    if node.target == "aten.unbind.int":
        dim = _dim(int(node.args[1]) if len(node.args) > 1 else 0, len(shape))
        return ev.eval(source, (*index[:dim], Affine.constant(item), *index[dim:]), guard)
    dim = _dim(int(node.args[2]) if len(node.args) > 2 else 0, len(shape))
    if node.target.startswith("aten.split_with_sizes"):
        sizes = [symbols.as_expr(s) for s in node.args[1]]
    else:
        chunk = symbols.as_expr(node.args[1])
        count = -(-ev.hint(shape[dim]) // ev.hint(chunk))
        sizes = [chunk] * count
    start = sum(sizes[:item], sympy.Integer(0))
    entry = indexing.offset(ev.emitter, index[dim], start)
    return ev.eval(source, (*index[:dim], entry, *index[dim + 1 :]), guard)


SPLITS = (
    "aten.split.Tensor",
    "aten.split_with_sizes.default",
    "aten.unbind.int",
    "aten.split_with_sizes_copy.default",
)


@lowering("aten.stack.default")
def _stack(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    pieces = list(node.args[0])
    rank = len(index)
    dim = _dim(int(node.args[1]) if len(node.args) > 1 else int(node.kwargs.get("dim", 0)), rank)
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


@lowering("aten.index_put.default")
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
