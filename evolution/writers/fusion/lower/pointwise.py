"""Elementwise ATen ops: arithmetic, comparisons, selects, casts and constant-filled tensors.

Operands broadcast against the result (a size-1 dim reads index 0). Floating math is float32 (float64 stays
float64); a result whose dtype is 16-bit is rounded to it and back, as eager PyTorch rounds every op, unless
the variant turns that off. Integer floor division and remainder follow Python's signs through a building
block (Triton's own `//` and `%` truncate on the GPU).
"""

from __future__ import annotations

import math

from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.evaluate import Evaluator, LoweringTable
from evolution.writers.fusion.model import Node
from evolution.writers.fusion.tiles import Affine, Index, Tile, compute_dtype, is_float

LOWERINGS = LoweringTable()

_RANK = {"i1": 0, "u8": 1, "i8": 1, "i16": 2, "i32": 3, "i64": 4, "fp32": 5, "fp64": 6}

UNARY = {
    "aten.neg.default": "-{a}",
    "aten.abs.default": "tl.abs({a})",
    "aten.exp.default": "tl.exp({a})",
    "aten.exp2.default": "tl.exp2({a})",
    "aten.expm1.default": "(tl.exp({a}) - 1.0)",
    "aten.log.default": "tl.log({a})",
    "aten.log2.default": "tl.log2({a})",
    "aten.log1p.default": "tl.log(1.0 + {a})",
    "aten.sqrt.default": "tl.sqrt({a})",
    "aten.rsqrt.default": "tl.rsqrt({a})",
    "aten.reciprocal.default": "(1.0 / {a})",
    "aten.sin.default": "tl.sin({a})",
    "aten.cos.default": "tl.cos({a})",
    "aten.tanh.default": "(2.0 * tl.sigmoid(2.0 * {a}) - 1.0)",
    "aten.sigmoid.default": "tl.sigmoid({a})",
    "aten.silu.default": "({a} * tl.sigmoid({a}))",
    "aten.relu.default": "tl.maximum({a}, 0.0)",
    "aten.erf.default": "tl.erf({a})",
    "aten.floor.default": "tl.floor({a})",
    "aten.ceil.default": "tl.ceil({a})",
    "aten.sign.default": "tl.where({a} > 0, 1.0, tl.where({a} < 0, -1.0, 0.0))",
}
FLOAT_ONLY = {k for k in UNARY if k not in ("aten.neg.default", "aten.abs.default")}
PREDICATES = {
    "aten.isnan.default": "({a} != {a})",
    "aten.isinf.default": "(tl.abs({a}) == float('inf'))",
    "aten.logical_not.default": "({a} == 0)",
}
BINARY = {
    "aten.add.Tensor": "({a} + {b})",
    "aten.add.Scalar": "({a} + {b})",
    "aten.sub.Tensor": "({a} - {b})",
    "aten.sub.Scalar": "({a} - {b})",
    "aten.rsub.Scalar": "({b} - {a})",
    "aten.rsub.Tensor": "({b} - {a})",
    "aten.mul.Tensor": "({a} * {b})",
    "aten.mul.Scalar": "({a} * {b})",
    "aten.maximum.default": "tl.maximum({a}, {b})",
    "aten.minimum.default": "tl.minimum({a}, {b})",
    "aten.bitwise_and.Tensor": "({a} & {b})",
    "aten.bitwise_and.Scalar": "({a} & {b})",
    "aten.bitwise_or.Tensor": "({a} | {b})",
    "aten.bitwise_or.Scalar": "({a} | {b})",
    "aten.bitwise_xor.Tensor": "({a} ^ {b})",
    "aten.bitwise_xor.Scalar": "({a} ^ {b})",
}
COMPARISONS = {
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
}
LOGICAL = {"aten.logical_and.default": "&", "aten.logical_or.default": "|", "aten.logical_xor.default": "^"}


def promote(*dtypes: str) -> str:
    return max(dtypes, key=lambda d: _RANK[d])


def operand(ev: Evaluator, ref: object, index: Index, guard: Tile | None, out_rank: int) -> Tile:
    if ev.is_tensor(ref):
        return ev.eval(ref, ev.broadcast(ref, index, out_rank), guard)
    return ev.scalar(ref)


def finish(ev: Evaluator, node: Node, tile: Tile) -> Tile:
    """Round a 16-bit floating result as eager PyTorch would."""
    if is_float(tile.dtype):
        return ev.emitter.round_to(tile, node.meta.dtype)
    return tile


@LOWERINGS.register(*UNARY)
def _unary(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    dtype = ev.result_dtype(node)
    if node.target in FLOAT_ONLY and not is_float(dtype):
        raise LoweringError(f"{node.target} on {node.meta.dtype} values")
    a = ev.emitter.cast(operand(ev, node.args[0], index, guard, len(index)), dtype)
    if node.target == "aten.neg.default" and dtype == "i1":
        raise LoweringError("negation of a bool tensor")
    result = ev.emitter.unary(UNARY[node.target], a, dtype)
    exact = ev.emitter.exact_storage(a)
    if exact is not None and node.target in ("aten.neg.default", "aten.abs.default"):
        ev.emitter.exact_in(result, exact)  # a sign changes no digit: -x of a bfloat16 x is one
    return finish(ev, node, result)


@LOWERINGS.register("aten.gelu.default")
def _gelu(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    a = ev.emitter.cast(operand(ev, node.args[0], index, guard, len(index)), "fp32")
    if node.kwargs.get("approximate", "none") == "tanh":
        inner = "0.7978845608028654 * ({a} + 0.044715 * {a} * {a} * {a})"
        fmt = f"0.5 * {{a}} * (1.0 + (2.0 * tl.sigmoid(2.0 * {inner}) - 1.0))"
    else:
        fmt = "0.5 * {a} * (1.0 + tl.erf({a} * 0.7071067811865476))"
    return finish(ev, node, ev.emitter.unary(fmt, a, "fp32"))


@LOWERINGS.register(*PREDICATES)
def _predicate(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    a = operand(ev, node.args[0], index, guard, len(index))
    return ev.emitter.unary(PREDICATES[node.target], a, "i1")


@LOWERINGS.register("aten.bitwise_not.default")
def _bitwise_not(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    a = operand(ev, node.args[0], index, guard, len(index))
    if a.dtype == "i1":
        return ev.emitter.negate(a)
    return ev.emitter.unary("(~{a})", a, a.dtype)


def _binary_operands(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> tuple[Tile, Tile, str]:
    dtype = ev.result_dtype(node)
    a = ev.emitter.cast(operand(ev, node.args[0], index, guard, len(index)), dtype)
    b = ev.emitter.cast(operand(ev, node.args[1], index, guard, len(index)), dtype)
    alpha = node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1)
    if node.target.startswith(("aten.add", "aten.sub", "aten.rsub")) and alpha != 1:
        b = ev.emitter.binary("({a} * {b})", b, ev.emitter.cast(ev.scalar(alpha), dtype), dtype)
    return a, b, dtype


@LOWERINGS.register(*BINARY)
def _binary(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    a, b, dtype = _binary_operands(ev, node, index, guard)
    return finish(ev, node, ev.emitter.binary(BINARY[node.target], a, b, dtype))


@LOWERINGS.register("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    mode = node.kwargs.get("rounding_mode")
    dtype = ev.result_dtype(node)
    a = operand(ev, node.args[0], index, guard, len(index))
    b = operand(ev, node.args[1], index, guard, len(index))
    if mode is None:
        a, b = ev.emitter.cast(a, dtype), ev.emitter.cast(b, dtype)
        return finish(ev, node, ev.emitter.binary("({a} / {b})", a, b, dtype))
    if mode == "floor":
        return floor_divide(ev, node, a, b, dtype)
    if is_float(dtype):
        a, b = ev.emitter.cast(a, dtype), ev.emitter.cast(b, dtype)
        quotient = ev.emitter.binary("({a} / {b})", a, b, dtype)
        truncated = ev.emitter.unary("tl.where({a} < 0, tl.ceil({a}), tl.floor({a}))", quotient, dtype)
        return finish(ev, node, truncated)
    a, b = ev.emitter.cast(a, dtype), ev.emitter.cast(b, dtype)
    return ev.emitter.combine("_kb_truncdiv({}, {})", [a, b], dtype)


@LOWERINGS.register("aten.floor_divide.default", "aten.floor_divide.Scalar")
def _floor_divide(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    a = operand(ev, node.args[0], index, guard, len(index))
    b = operand(ev, node.args[1], index, guard, len(index))
    return floor_divide(ev, node, a, b, ev.result_dtype(node))


def floor_divide(ev: Evaluator, node: Node, a: Tile, b: Tile, dtype: str) -> Tile:
    a, b = ev.emitter.cast(a, dtype), ev.emitter.cast(b, dtype)
    if is_float(dtype):
        return finish(ev, node, ev.emitter.binary("tl.floor({a} / {b})", a, b, dtype))
    return ev.emitter.combine("_kb_floordiv({}, {})", [a, b], dtype)


@LOWERINGS.register("aten.remainder.Tensor", "aten.remainder.Scalar")
def _remainder(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    dtype = ev.result_dtype(node)
    a = ev.emitter.cast(operand(ev, node.args[0], index, guard, len(index)), dtype)
    b = ev.emitter.cast(operand(ev, node.args[1], index, guard, len(index)), dtype)
    if is_float(dtype):
        return finish(ev, node, ev.emitter.binary("({a} - tl.floor({a} / {b}) * {b})", a, b, dtype))
    return ev.emitter.combine("_kb_pymod({}, {})", [a, b], dtype)


@LOWERINGS.register("aten.pow.Tensor_Scalar")
def _pow(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    dtype = ev.result_dtype(node)
    a = ev.emitter.cast(operand(ev, node.args[0], index, guard, len(index)), dtype)
    exponent = node.args[1]
    if not isinstance(exponent, (int, float)):
        raise LoweringError("pow with an exponent computed at run time")
    forms = {
        0: "({a} * 0 + 1)",
        1: "{a}",
        2: "({a} * {a})",
        3: "({a} * {a} * {a})",
        4: "(({a} * {a}) * ({a} * {a}))",
        -1: "(1.0 / {a})",
        -2: "(1.0 / ({a} * {a}))",
        0.5: "tl.sqrt({a})",
        -0.5: "tl.rsqrt({a})",
    }
    key = int(exponent) if float(exponent).is_integer() else float(exponent)
    if key not in forms or (not is_float(dtype) and key in (-1, -2, 0.5, -0.5)):
        raise LoweringError(f"pow with exponent {exponent}")
    return finish(ev, node, ev.emitter.unary(forms[key], a, dtype))


def _comparison(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    op = COMPARISONS[node.target.split(".")[1]]
    a = operand(ev, node.args[0], index, guard, len(index))
    b = operand(ev, node.args[1], index, guard, len(index))
    common = promote(a.dtype, b.dtype)
    a, b = ev.emitter.cast(a, common), ev.emitter.cast(b, common)
    return ev.emitter.binary(f"({{a}} {op} {{b}})", a, b, "i1")


for _name in COMPARISONS:
    LOWERINGS.register(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar")(_comparison)


@LOWERINGS.register(*LOGICAL)
def _logical(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    a = ev.emitter.cast(operand(ev, node.args[0], index, guard, len(index)), "i1")
    b = ev.emitter.cast(operand(ev, node.args[1], index, guard, len(index)), "i1")
    return ev.emitter.binary(f"({{a}} {LOGICAL[node.target]} {{b}})", a, b, "i1")


@LOWERINGS.register("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    dtype = ev.result_dtype(node)
    cond = ev.emitter.cast(operand(ev, node.args[0], index, guard, len(index)), "i1")
    a = ev.emitter.cast(operand(ev, node.args[1], index, guard, len(index)), dtype)
    b = ev.emitter.cast(operand(ev, node.args[2], index, guard, len(index)), dtype)
    return ev.emitter.where(cond, a, b, dtype)


@LOWERINGS.register("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    dtype = ev.result_dtype(node)
    x = ev.emitter.cast(operand(ev, node.args[0], index, guard, len(index)), dtype)
    mask = ev.emitter.cast(operand(ev, node.args[1], index, guard, len(index)), "i1")
    value = ev.emitter.cast(operand(ev, node.args[2], index, guard, len(index)), dtype)
    return ev.emitter.where(mask, value, x, dtype)


@LOWERINGS.register("aten.clamp.default", "aten.clamp_min.default", "aten.clamp_max.default")
def _clamp(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    dtype = ev.result_dtype(node)
    x = ev.emitter.cast(operand(ev, node.args[0], index, guard, len(index)), dtype)
    if node.target == "aten.clamp_min.default":
        low, high = node.args[1], None
    elif node.target == "aten.clamp_max.default":
        low, high = None, node.args[1]
    else:
        low = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        high = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    if low is not None:
        x = ev.emitter.binary("tl.maximum({a}, {b})", x, ev.emitter.cast(ev.scalar(low), dtype), dtype)
    if high is not None:
        x = ev.emitter.binary("tl.minimum({a}, {b})", x, ev.emitter.cast(ev.scalar(high), dtype), dtype)
    return finish(ev, node, x)


# --- casts and copies --------------------------------------------------------------------------------------


@LOWERINGS.register("aten._to_copy.default", "prims.convert_element_type.default", "aten.to.dtype")
def _cast(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    source = ev.eval(node.args[0], index, guard) if ev.is_tensor(node.args[0]) else ev.scalar(node.args[0])
    target = node.meta.dtype
    tile = ev.emitter.cast(source, compute_dtype(target))
    if (is_float(tile.dtype) and source.dtype != tile.dtype) or target in ("bfloat16", "float16"):
        tile = ev.emitter.round_to(tile, target)
    return tile


@LOWERINGS.register("aten.copy.default")
def _copy(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    """copy(dst, src): src broadcast to dst's shape and cast to dst's dtype."""
    source = operand(ev, node.args[1], index, guard, len(index))
    tile = ev.emitter.cast(source, ev.result_dtype(node))
    return ev.emitter.round_to(tile, node.meta.dtype) if is_float(tile.dtype) else tile


@LOWERINGS.register(
    "aten.clone.default", "aten.alias.default", "aten.lift_fresh_copy.default", "aten.contiguous.default"
)
def _identity(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    return ev.eval(node.args[0], index, guard)


# --- constant-filled tensors -------------------------------------------------------------------------------


def _fill(ev: Evaluator, node: Node, value: object) -> Tile:
    dtype = ev.result_dtype(node)
    return ev.emitter.cast(ev.scalar(value), dtype)


@LOWERINGS.register("aten.zeros_like.default", "aten.zeros.default", "aten.new_zeros.default")
def _zeros(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    return _fill(ev, node, 0)


@LOWERINGS.register(
    "aten.empty_like.default", "aten.empty.memory_format", "aten.new_empty.default", "aten.empty.default"
)
def _empty(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    return _fill(ev, node, 0)  # an uninitialised buffer: any value is allowed, zero is one


@LOWERINGS.register("aten.ones_like.default", "aten.ones.default", "aten.new_ones.default")
def _ones(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    return _fill(ev, node, 1)


@LOWERINGS.register("aten.full_like.default", "aten.full.default", "aten.new_full.default")
def _full(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    value = node.args[1] if node.target != "aten.new_full.default" else node.args[2]
    if isinstance(value, float) and math.isinf(value) and not is_float(ev.result_dtype(node)):
        raise LoweringError("an infinite fill of an integer tensor")
    return _fill(ev, node, value)


@LOWERINGS.register("aten.scalar_tensor.default")
def _scalar_tensor(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    return _fill(ev, node, node.args[0])


@LOWERINGS.register("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    if node.target == "aten.arange.default":
        start, step = 0, 1
    else:
        start = node.args[0]
        step = node.args[2] if len(node.args) > 2 else node.kwargs.get("step", 1)
    dtype = ev.result_dtype(node)
    position = ev.index_tile(index[0])
    if not is_float(dtype) and isinstance(start, (int, dict)) and isinstance(step, (int, dict)):
        from evolution.writers.fusion import symbols

        form = index[0]
        if isinstance(form, Affine):
            affine = form.scaled(symbols.as_expr(step)).offset(symbols.as_expr(start))
            return ev.emitter.cast(ev.emitter.affine_tile(affine), dtype)
    start_tile = ev.emitter.cast(ev.scalar(start), dtype)
    step_tile = ev.emitter.cast(ev.scalar(step), dtype)
    scaled = ev.emitter.binary("({a} * {b})", ev.emitter.cast(position, dtype), step_tile, dtype)
    return ev.emitter.binary("({a} + {b})", start_tile, scaled, dtype)


@LOWERINGS.register("aten.fill.Scalar", "aten.fill.Tensor")
def _fill_value(ev: Evaluator, node: Node, index: Index, guard: Tile | None) -> Tile:
    value = node.args[1]
    tile = ev.eval(value, (), guard) if ev.is_tensor(value) else ev.scalar(value)
    return ev.emitter.cast(tile, ev.result_dtype(node))
