"""Selection: top-k and sort along a dimension held in registers, and scatters into a fresh tensor.

Top-k and sort bring their operand into the canonical [rows, N] layout of the building blocks (a reshape of
the tile with the selected axis last; rows are every other register axis, 1 when there is none), call the
block the variant asks for, and lay the [rows, K] result back on the output's atoms. A scatter read at an
index is a membership test: the index tensor is read along the scattered dimension and compared with the
position.
"""

from __future__ import annotations

import sympy

from evolution.writers.fusion import symbols
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.evaluate import Evaluator, LoweringTable
from evolution.writers.fusion.lower.args import normal_dim
from evolution.writers.fusion.lower.reduce import pick, reduce_to
from evolution.writers.fusion.model import Node
from evolution.writers.fusion.tiles import Affine, Atom, Index, Tile, compute_dtype, is_float

LOWERINGS = LoweringTable()

TOPK_BLOCKS = {
    "mask": "_kb_topk_rows",
    "threshold": "_kb_topk_rows_threshold",
    "twopass": "_kb_topk_rows_twopass",
    "bitonic": "_kb_topk_rows_bitonic",
}


def to_rows(ev: Evaluator, tile: Tile, atom: Atom) -> tuple[str, tuple[Atom, ...], str]:
    """(code of an [R, N] view of `tile` with `atom` last, the row atoms, the R expression)."""
    emitter = ev.emitter
    rows = tuple(a for a in tile.atoms if a is not atom)
    code = tile.code
    if tile.atoms and tile.atoms[-1] is not atom:
        order = [tile.atoms.index(a) for a in (*rows, atom)]
        code = emitter.let(f"tl.permute({code}, {tuple(order)})", (*rows, atom), tile.dtype, tile.grid).code
    width = emitter.extent_code(atom)
    if not rows:
        return f"{_paren(code)}[None, :]", rows, "1"
    if len(rows) == 1:
        return code, rows, emitter.extent_code(rows[0])
    height = " * ".join(emitter.extent_code(a) for a in rows)
    flat = emitter.let(f"tl.reshape({code}, [{height}, {width}])", (*rows, atom), tile.dtype, tile.grid)
    return flat.code, rows, height


def from_rows(
    ev: Evaluator, code: str, rows: tuple[Atom, ...], atom: Atom, dtype: str, grid: frozenset
) -> Tile:
    """A [R, K] block result laid on `rows` + `atom` in region order."""
    emitter = ev.emitter
    width = emitter.extent_code(atom)
    if not rows:
        tile = emitter.let(f"tl.reshape({code}, [{width}])", (atom,), dtype, grid)
        return tile
    if len(rows) == 1:
        tile = emitter.let(code, (rows[0], atom), dtype, grid)
    else:
        shape = ", ".join([emitter.extent_code(a) for a in rows] + [width])
        tile = emitter.let(f"tl.reshape({code}, [{shape}])", (*rows, atom), dtype, grid)
    wanted = emitter.ordered(set(tile.atoms))
    if wanted != tile.atoms:
        order = [tile.atoms.index(a) for a in wanted]
        tile = emitter.let(f"tl.permute({tile.code}, {tuple(order)})", wanted, dtype, grid)
    return tile


def _paren(code: str) -> str:
    return code if code.isidentifier() else f"({code})"


def _target_atom(ev: Evaluator, index: Index, dim: int, extent: sympy.Expr) -> tuple[Atom, bool]:
    """The atom the selected dim is produced on: the consumer's own when it reads it plainly, else a new one
    (and the element is picked afterwards)."""
    entry = index[dim]
    atom = entry.atom if isinstance(entry, Affine) else None
    if atom is not None and atom.extent == extent and ev.emitter.binding(atom).kind == "register":
        return atom, True
    others = ev.index_atoms(index[:dim] + index[dim + 1 :]) | entry.atoms
    return ev.atom(extent, others), False


@LOWERINGS.register("aten.topk.default")
def _topk(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> list[Tile]:
    source = node.args[0]
    shape = ev.shape(source)
    rank = len(shape)
    k = symbols.as_expr(node.args[1])
    dim = normal_dim(int(node.args[2]) if len(node.args) > 2 else int(node.kwargs.get("dim", -1)), rank)
    largest = bool(node.args[3]) if len(node.args) > 3 else bool(node.kwargs.get("largest", True))
    if not is_float(compute_dtype(ev.dtype(source))):
        raise LoweringError("top-k of integer values")
    out_atom, direct = _target_atom(ev, index, dim, k)
    if ev.recorder is not None:
        ev.recorder.spanned(out_atom, "rank")
    others = ev.index_atoms(index[:dim] + index[dim + 1 :])
    atom = ev.atom(shape[dim], others | {out_atom})
    full = (*index[:dim], Affine.of(atom), *index[dim + 1 :])
    values = ev.emitter.cast(ev.eval(source, full, guard), "fp32")
    if not largest:
        values = ev.emitter.unary("(-{a})", values, "fp32")
    valid = ev.emitter.mask({atom})
    if atom not in values.atoms:
        values = ev.emitter.full(values, ev.emitter.ordered(set(values.atoms) | {atom}))
    rows_code, rows, _ = to_rows(ev, values, atom)
    valid_code = "True"
    if valid is not None:
        valid_code = to_rows(ev, valid, atom)[0]
    block = TOPK_BLOCKS[ev.emitter.options.topk]
    kp = ev.emitter.extent_code(out_atom)
    kk = ev.emitter.params.size(k, constexpr=True)
    pair = ev.emitter.fresh("topk")
    ev.emitter.statement(f"{pair}_v, {pair}_i = {block}({rows_code}, {valid_code}, {kk}, {kp})", values.grid)
    top = from_rows(ev, f"{pair}_v", rows, out_atom, "fp32", values.grid)
    where = from_rows(ev, f"{pair}_i", rows, out_atom, "i32", values.grid)
    if not largest:
        top = ev.emitter.unary("(-{a})", top, "fp32")
    top = ev.emitter.round_to(top, node.outputs[0].dtype)
    if not direct:
        position = ev.index_tile(index[dim])
        top, where = pick(ev, top, out_atom, position), pick(ev, where, out_atom, position)
    return [top, ev.emitter.cast(where, "i64")]


@LOWERINGS.register("aten.sort.default", "aten.sort.stable")
def _sort(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> list[Tile]:
    source = node.args[0]
    shape = ev.shape(source)
    rank = len(shape)
    if node.target == "aten.sort.stable":
        dim = int(node.kwargs.get("dim", -1))
        descending = bool(node.kwargs.get("descending", False))
    else:
        dim = int(node.args[1]) if len(node.args) > 1 else int(node.kwargs.get("dim", -1))
        descending = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("descending", False))
    dim = normal_dim(dim, rank)
    if not is_float(compute_dtype(ev.dtype(source))):
        raise LoweringError("sort of integer values")
    atom, direct = _target_atom(ev, index, dim, shape[dim])
    if ev.recorder is not None:
        ev.recorder.spanned(atom, "rank")
    full = (*index[:dim], Affine.of(atom), *index[dim + 1 :])
    values = ev.emitter.cast(ev.eval(source, full, guard), "fp32")
    if not descending:
        values = ev.emitter.unary("(-{a})", values, "fp32")
    if atom not in values.atoms:
        values = ev.emitter.full(values, ev.emitter.ordered(set(values.atoms) | {atom}))
    lanes = ev.emitter.atom_index(atom)
    keys = ev.emitter.binary("_kb_pack({a}, {b})", values, lanes, "i64")
    mask = ev.emitter.mask({atom})
    if mask is not None:
        keys = ev.emitter.where(mask, keys, ev.emitter.constant(-(2**63) + 1, "i64"), "i64")
    rows_code, rows, _ = to_rows(ev, keys, atom)
    name = ev.emitter.fresh("sorted")
    ev.emitter.statement(f"{name} = _kb_sort_rows({rows_code})", keys.grid)
    ordered = from_rows(ev, name, rows, atom, "i64", keys.grid)
    top = ev.emitter.unary("_kb_key_value({a})", ordered, "fp32")
    where = ev.emitter.unary("_kb_key_index({a})", ordered, "i32")
    if not descending:
        top = ev.emitter.unary("(-{a})", top, "fp32")
    top = ev.emitter.round_to(top, node.outputs[0].dtype)
    if not direct:
        position = ev.index_tile(index[dim])
        top, where = pick(ev, top, atom, position), pick(ev, where, atom, position)
    return [top, ev.emitter.cast(where, "i64")]


@LOWERINGS.register("aten.argsort.default", "aten.argsort.stable")
def _argsort(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    as_sort = Node(node.name, "aten.sort.default", node.args, node.kwargs, (node.meta, node.meta))
    if node.target == "aten.argsort.stable":
        as_sort = Node(node.name, "aten.sort.stable", node.args, node.kwargs, (node.meta, node.meta))
    return _sort(ev, as_sort, index, guard)[1]


@LOWERINGS.register("aten.scatter.value", "aten.scatter.src", "aten.scatter_add.default")
def _scatter(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    base, dim, positions = node.args[0], int(node.args[1]), node.args[2]
    shape = ev.shape(base)
    dim = normal_dim(dim, len(shape))
    index_shape = ev.shape(positions)
    for d, (a, b) in enumerate(zip(index_shape, shape, strict=True)):
        if d != dim and ev.hint(a) != ev.hint(b) and ev.hint(a) != 1:
            raise LoweringError("a scatter whose index is smaller than its target along another dim")
    dtype = ev.result_dtype(node)
    kept = ev.emitter.cast(ev.eval(base, index, guard), dtype)
    count = index_shape[dim]
    if ev.hint(count) == 1:
        lane: Affine = Affine.constant(0)
        atoms: list[Atom] = []
    else:
        atom = ev.atom(count, ev.index_atoms(index))
        lane, atoms = Affine.of(atom), [atom]
    read = tuple(
        lane if d == dim else (Affine.constant(0) if ev.hint(index_shape[d]) == 1 else e)
        for d, e in enumerate(index)
    )
    target = ev.eval(positions, read, guard)
    position = ev.index_tile(index[dim])
    # Ints of two widths compare by value (Triton widens the narrower): no cast of either side, and an
    # index widened to int64 (torch's dtype for indices) is compared as it was before.
    target, position = (
        ev.emitter.unwidened(t) if t.dtype in ("i32", "i64") else ev.emitter.cast(t, "i32")
        for t in (target, position)
    )
    hit = ev.emitter.binary("({a} == {b})", target, position, "i1")
    hits = ev.emitter.cast(hit, "i32")
    if node.target == "aten.scatter.value":
        any_hit = ev.emitter.cast(reduce_to(ev, hits, atoms, "max") if atoms else hits, "i1")
        value = ev.emitter.cast(ev.scalar(node.args[3]), dtype)
        return ev.emitter.where(any_hit, value, kept, dtype)
    source = node.args[3]
    contributions = ev.emitter.cast(ev.eval(source, read, guard), dtype)
    chosen = ev.emitter.where(hit, contributions, ev.emitter.constant(0, dtype), dtype)
    total = reduce_to(ev, chosen, atoms, "sum") if atoms else chosen
    if node.target == "aten.scatter_add.default":
        return ev.emitter.binary("({a} + {b})", kept, total, dtype)
    any_hit = ev.emitter.cast(reduce_to(ev, hits, atoms, "max") if atoms else hits, "i1")
    return ev.emitter.where(any_hit, total, kept, dtype)
