"""Reductions, softmax-like ops and prefix sums over row dimensions held in registers.

A reduction read at an index reads its operand with an atom per reduced dimension (the same atom as the
consumer's when the extents match and nothing forbids it: a norm's sum and its output share the row's loads),
masks the padded lanes with the operation's identity and reduces over those axes. Softmax is its max, exp
and sum composed the same way. A prefix sum runs tl.cumsum along its atom; read anywhere else (its element
at a grid index) it is computed whole and the element picked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy

from evolution.writers.fusion import symbols
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.evaluate import Evaluator, LoweringTable, squares
from evolution.writers.fusion.lower.pointwise import finish
from evolution.writers.fusion.model import Node
from evolution.writers.fusion.tiles import Affine, Atom, Index, IndexExpr, Tile, compute_dtype, is_float

LOWERINGS = LoweringTable()

_BIG = 2**31 - 1


def _dims(raw: object, rank: int) -> list[int]:
    if raw is None or raw == []:
        return list(range(rank))
    values: list[Any] = raw if isinstance(raw, list) else [raw]  # ints, as the node's arguments hold them
    return sorted({int(d) + rank if int(d) < 0 else int(d) for d in values})


def reduce_index(
    ev: Evaluator, source: object, index: Index, dims: list[int], keepdim: bool, kind: str = "reduce"
) -> tuple[Index, list[Atom]]:
    """The operand's index for a reduction over `dims` read at `index`, and the atoms reduced over."""
    shape = ev.shape(source)
    hints = ev.hints(source)
    kept = iter(index) if not keepdim else None
    outer: list[IndexExpr | None] = []
    for d in range(len(shape)):
        if d in dims:
            outer.append(None)
        else:
            outer.append(index[d] if keepdim else next(kept))  # type: ignore[arg-type]
    taken = set(ev.index_atoms(tuple(e for e in outer if e is not None)))
    atoms: list[Atom] = []
    full: list[IndexExpr] = []
    for d, entry in enumerate(outer):
        if entry is not None:
            full.append(entry)
        elif hints[d] == 1:
            full.append(Affine.constant(0))
        else:
            atom = ev.atom(shape[d], taken, kind)
            taken.add(atom)
            atoms.append(atom)
            full.append(Affine.of(atom))
    return tuple(full), atoms


def masked(ev: Evaluator, tile: Tile, atoms: list[Atom], identity: float | int) -> Tile:
    mask = ev.emitter.mask(set(atoms))
    if mask is None:
        return tile
    return ev.emitter.where(mask, tile, ev.emitter.constant(identity, tile.dtype), tile.dtype)


def reduce_to(ev: Evaluator, tile: Tile, atoms: list[Atom], kind: str) -> Tile:
    """`kind` in sum | max | min over `atoms`, padded lanes excluded."""
    lanes = identity_padded(ev, tile, atoms, kind)
    return ev.emitter.reduce(lanes, atoms, kind, lanes.dtype)


def identity_padded(ev: Evaluator, tile: Tile, atoms: list[Atom], kind: str) -> Tile:
    """`tile` with its lanes outside `atoms`' extents set to the identity of `kind` (a bool made an int)."""
    identity: float | int = {"sum": 0, "max": float("-inf"), "min": float("inf")}[kind]
    if not is_float(tile.dtype) and kind != "sum":
        identity = -(2**31) if kind == "max" else 2**31 - 1
        if tile.dtype == "i64":
            identity = -(2**63) if kind == "max" else 2**63 - 1
        if tile.dtype == "i1":
            tile = ev.emitter.cast(tile, "i32")
            identity = 0 if kind == "max" else 1
    return masked(ev, tile, atoms, identity)


def reduce_lazy(
    ev: Evaluator, compute: Callable[[], Tile], atoms: list[Atom], kind: str, lanes: str = ""
) -> Tile:
    """reduce_to of `compute()`; over an atom walked in chunks, `compute` runs inside a pre-loop and the
    chunks are combined lane by lane (in a value named `lanes`, else after `kind`), then reduced (two
    passes)."""
    looped = [a for a in atoms if ev.emitter.binding(a).kind == "loop"]
    if not looped:
        return reduce_to(ev, compute(), atoms, kind)
    if len(looped) > 1:
        raise LoweringError("a reduction over two axes split into chunks")
    return ev.emitter.accumulate(
        looped[0], lambda: identity_padded(ev, compute(), atoms, kind), atoms, kind, lanes
    )


def count(ev: Evaluator, source: object, dims: list[int]) -> Tile:
    shape = ev.shape(source)
    total = sympy.Integer(1)
    for d in dims:
        total = total * shape[d]
    return Tile(ev.emitter.params.size(sympy.expand(total)), (), "i32")


@LOWERINGS.register("aten.sum.dim_IntList", "aten.sum.default", "aten.mean.dim", "aten.mean.default")
def _sum(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    rank = len(ev.shape(source))
    dims = _dims(node.args[1] if len(node.args) > 1 else None, rank)
    keepdim = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim", False))
    full, atoms = reduce_index(ev, source, index, dims, keepdim)
    dtype = ev.result_dtype(node)
    lanes = "sum_sq" if squares(source, ev.nodes) else ""  # a two-pass norm's partial sums of squares
    total = reduce_lazy(ev, lambda: ev.emitter.cast(ev.eval(source, full, guard), dtype), atoms, "sum", lanes)
    if node.target.startswith("aten.mean"):
        # A size divides a float sum as it is (Triton promotes it): `/ N`, not `/ (N * 1.0)`.
        divisor = count(ev, source, dims)
        if not (divisor.is_scalar and dtype in ("fp32", "fp64") and total.dtype == dtype):
            divisor = ev.emitter.cast(divisor, dtype)
        total = ev.emitter.binary("({a} / {b})", total, divisor, dtype)
    return finish(ev, node, total)


@LOWERINGS.register("aten.amax.default", "aten.amin.default", "aten.max.default", "aten.min.default")
def _extreme(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    rank = len(ev.shape(source))
    dims = _dims(node.args[1] if len(node.args) > 1 else None, rank)
    keepdim = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim", False))
    full, atoms = reduce_index(ev, source, index, dims, keepdim)
    kind = "max" if node.target in ("aten.amax.default", "aten.max.default") else "min"
    dtype = ev.result_dtype(node)
    return reduce_lazy(ev, lambda: ev.emitter.cast(ev.eval(source, full, guard), dtype), atoms, kind)


@LOWERINGS.register("aten.any.dim", "aten.any.dims", "aten.any.default", "aten.all.dim", "aten.all.default")
def _any_all(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    rank = len(ev.shape(source))
    dims = _dims(node.args[1] if len(node.args) > 1 else None, rank)
    keepdim = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim", False))
    full, atoms = reduce_index(ev, source, index, dims, keepdim)
    kind = "max" if node.target.startswith("aten.any") else "min"

    def flags() -> Tile:
        return ev.emitter.cast(ev.emitter.cast(ev.eval(source, full, guard), "i1"), "i32")

    return ev.emitter.cast(reduce_lazy(ev, flags, atoms, kind), "i1")


@LOWERINGS.register("aten.max.dim", "aten.min.dim", "aten.argmax.default", "aten.argmin.default")
def _arg_extreme(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile | list[Tile]:
    source = node.args[0]
    rank = len(ev.shape(source))
    raw_dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if raw_dim is None:
        raise LoweringError(f"{node.target} over all dims (a flattened index)")
    dims = _dims(raw_dim, rank)
    keepdim = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim", False))
    full, atoms = reduce_index(ev, source, index, dims, keepdim, kind="select")
    kind = "max" if node.target in ("aten.max.dim", "aten.argmax.default") else "min"
    value = ev.emitter.cast(ev.eval(source, full, guard), compute_dtype(ev.dtype(source)))
    best = reduce_to(ev, value, atoms, kind)
    if not atoms:
        position = ev.emitter.constant(0, "i32")
    else:
        hit = ev.emitter.binary("({a} == {b})", value, best, "i1")
        where = ev.emitter.where(
            hit, ev.emitter.atom_index(atoms[0]), ev.emitter.constant(_BIG, "i32"), "i32"
        )
        position = reduce_to(ev, where, atoms, "min")
    position = ev.emitter.cast(position, "i64")
    if node.target.startswith("aten.arg"):
        return position
    return [best, position]


def _softmax_parts(
    ev: Evaluator, source: object, index: Index, dim: int, guard: Tile | None
) -> tuple[Tile, Tile, Tile]:
    """(x at index, max over dim, sum of exp(x - max) over dim), floats in float32."""
    shape = ev.shape(source)
    others = ev.index_atoms(index[:dim] + index[dim + 1 :])
    atom = ev.atom(shape[dim], others, "reduce")
    full = (*index[:dim], Affine.of(atom), *index[dim + 1 :])

    def row() -> Tile:
        return ev.emitter.cast(ev.eval(source, full, guard), "fp32")

    top = reduce_lazy(ev, row, [atom], "max")

    def shifted() -> Tile:
        return ev.emitter.unary("tl.exp({a})", ev.emitter.binary("({a} - {b})", row(), top, "fp32"), "fp32")

    total = reduce_lazy(ev, shifted, [atom], "sum")
    here = ev.emitter.cast(ev.eval(source, index, guard), "fp32")
    return here, top, total


@LOWERINGS.register("aten._softmax.default", "aten.softmax.int")
def _softmax(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    dim = _dims(node.args[1], len(index))[0]
    here, top, total = _softmax_parts(ev, source, index, dim, guard)
    value = ev.emitter.unary("tl.exp({a})", ev.emitter.binary("({a} - {b})", here, top, "fp32"), "fp32")
    result = ev.emitter.binary("({a} / {b})", value, total, "fp32")
    return finish(ev, node, ev.emitter.cast(result, ev.result_dtype(node)))


@LOWERINGS.register("aten._log_softmax.default", "aten.log_softmax.int")
def _log_softmax(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    dim = _dims(node.args[1], len(index))[0]
    here, top, total = _softmax_parts(ev, source, index, dim, guard)
    shifted = ev.emitter.binary("({a} - {b})", here, top, "fp32")
    result = ev.emitter.binary("({a} - tl.log({b}))", shifted, total, "fp32")
    return finish(ev, node, ev.emitter.cast(result, ev.result_dtype(node)))


@LOWERINGS.register("aten.logsumexp.default")
def _logsumexp(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    rank = len(ev.shape(source))
    dims = _dims(node.args[1], rank)
    keepdim = bool(node.args[2]) if len(node.args) > 2 else False
    full, atoms = reduce_index(ev, source, index, dims, keepdim)

    def row() -> Tile:
        return ev.emitter.cast(ev.eval(source, full, guard), "fp32")

    top = reduce_lazy(ev, row, atoms, "max")
    safe = ev.emitter.unary("tl.where({a} == float('-inf'), 0.0, {a})", top, "fp32")

    def shifted() -> Tile:
        return ev.emitter.unary("tl.exp({a})", ev.emitter.binary("({a} - {b})", row(), safe, "fp32"), "fp32")

    total = reduce_lazy(ev, shifted, atoms, "sum")
    return finish(ev, node, ev.emitter.binary("({a} + tl.log({b}))", safe, total, "fp32"))


def _moments(
    ev: Evaluator, source: object, full: Index, atoms: list[Atom], dims: list[int], guard: Tile | None
) -> tuple[Tile, Tile, Tile]:
    """(count, mean, sum of squared deviations) of `source` over `dims`, in float32, two passes over the row
    (the variance and the layer norm share them)."""

    def row() -> Tile:
        return ev.emitter.cast(ev.eval(source, full, guard), "fp32")

    n = ev.emitter.cast(count(ev, source, dims), "fp32")
    mean = ev.emitter.binary("({a} / {b})", reduce_lazy(ev, row, atoms, "sum"), n, "fp32")

    def squared() -> Tile:
        return ev.emitter.unary("({a} * {a})", ev.emitter.binary("({a} - {b})", row(), mean, "fp32"), "fp32")

    return n, mean, reduce_lazy(ev, squared, atoms, "sum")


@LOWERINGS.register("aten.var.correction", "aten.std.correction")
def _variance(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    rank = len(ev.shape(source))
    dims = _dims(node.args[1] if len(node.args) > 1 else None, rank)
    correction = node.kwargs.get("correction", 1)
    keepdim = bool(node.kwargs.get("keepdim", False))
    full, atoms = reduce_index(ev, source, index, dims, keepdim)
    n, _, squares = _moments(ev, source, full, atoms, dims, guard)
    divisor = ev.emitter.binary("({a} - {b})", n, ev.emitter.constant(float(correction or 0), "fp32"), "fp32")
    value = ev.emitter.binary("({a} / {b})", squares, divisor, "fp32")
    if node.target == "aten.std.correction":
        value = ev.emitter.unary("tl.sqrt({a})", value, "fp32")
    return finish(ev, node, value)


@LOWERINGS.register("aten.cumsum.default", "aten.cumprod.default")
def _cumulative(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = node.args[0]
    shape = ev.shape(source)
    dim = _dims(node.args[1], len(shape))[0]
    dtype = ev.result_dtype(node)
    fn = "cumsum" if node.target == "aten.cumsum.default" else "cumprod"
    entry = index[dim]
    atom = entry.atom if isinstance(entry, Affine) else None
    direct = atom is not None and atom.extent == shape[dim] and ev.emitter.binding(atom).kind == "register"
    if not direct:
        others = ev.index_atoms(index[:dim] + index[dim + 1 :])
        atom = ev.atom(shape[dim], others | entry.atoms)
    assert atom is not None
    if ev.recorder is not None:
        ev.recorder.spanned(atom)
    full = (*index[:dim], Affine.of(atom), *index[dim + 1 :])
    row = ev.emitter.cast(ev.eval(source, full, guard), dtype)
    row = masked(ev, row, [atom], 0 if fn == "cumsum" else 1)
    if atom not in row.atoms:
        row = ev.emitter.full(row, ev.emitter.ordered(set(row.atoms) | {atom}))
    scanned = ev.emitter.let(f"tl.{fn}({row.code}, axis={row.atoms.index(atom)})", row.atoms, dtype, row.grid)
    if direct:
        return scanned
    return pick(ev, scanned, atom, ev.index_tile(entry))


def pick(ev: Evaluator, tile: Tile, atom: Atom, position: Tile) -> Tile:
    """The element of `tile` along `atom` at `position` (a one-hot select: a sum over the atom)."""
    hit = ev.emitter.binary("({a} == {b})", ev.emitter.atom_index(atom), position, "i1")
    zero = ev.emitter.constant(0, tile.dtype)
    chosen = ev.emitter.where(hit, tile, zero, tile.dtype)
    mask = ev.emitter.mask({atom})
    if mask is not None:
        chosen = ev.emitter.where(mask, chosen, zero, tile.dtype)
    return ev.emitter.reduce(chosen, [atom], "sum", tile.dtype)


def size_of(value: object) -> sympy.Expr:
    return symbols.as_expr(value)


@LOWERINGS.register("aten.native_layer_norm.default")
def _layer_norm(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> list[Tile]:
    """(normalised, mean, rstd) over the trailing `normalized_shape` dims (the statistics keep them as 1)."""
    source, normalized, weight, bias, eps = node.args[:5]
    rank = len(ev.shape(source))
    dims = list(range(rank - len(normalized), rank))
    outer = tuple(Affine.constant(0) if d in dims else e for d, e in enumerate(index))
    full, atoms = reduce_index(ev, source, outer, dims, True)
    n, mean, squares = _moments(ev, source, full, atoms, dims, guard)
    variance = ev.emitter.binary("({a} / {b})", squares, n, "fp32")
    rstd = ev.emitter.binary("tl.rsqrt({a} + {b})", variance, ev.emitter.cast(ev.scalar(eps), "fp32"), "fp32")
    here = ev.emitter.cast(ev.eval(source, index, guard), "fp32")
    value = ev.emitter.binary(
        "({a} * {b})", ev.emitter.binary("({a} - {b})", here, mean, "fp32"), rstd, "fp32"
    )
    trailing = index[rank - len(normalized) :]
    if weight is not None:
        value = ev.emitter.binary(
            "({a} * {b})", value, ev.emitter.cast(ev.eval(weight, trailing, guard), "fp32"), "fp32"
        )
    if bias is not None:
        value = ev.emitter.binary(
            "({a} + {b})", value, ev.emitter.cast(ev.eval(bias, trailing, guard), "fp32"), "fp32"
        )
    value = ev.emitter.round_to(value, node.outputs[0].dtype)
    return [value, mean, rstd]
