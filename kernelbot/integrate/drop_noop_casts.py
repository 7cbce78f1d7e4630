"""Transformer: a cast in a kernel to the dtype its value already has goes.

Inductor casts each op's result to the dtype it computes in before it is stored or used (`tmp25 =
tmp24.to(tl.float32)` where `tmp24` is a product of float32 values), and the names module keeps such a
line as the value stored (`x_out = (tmp13 * inv_rms * weight).to(tl.float32)`, `residual_out =
tmp13.to(tl.float32)`). Triton returns a value cast to its own dtype unchanged, so no instruction goes
with the cast, and a reviewer reads it as a conversion that is not there.

What a value's dtype is, is read from the kernel alone, and only where the code says it: a cast
(`.to(tl.float32)`, `tl.cast(x, tl.float32)`), a `tl.full(..., tl.float32)`, and from those the
arithmetic, `tl.where`, `tl.broadcast_to`, indexing, and float32 `tl.sum`, `tl.rsqrt`, `tl.exp`, ... of
them (a float32 value with a Python number stays float32). A name has a dtype where every line binding it
gives it that dtype; a loop's accumulator (zeros, then `tl.where(mask, acc + term, acc)`) is read by
assuming each name's dtype from one of its lines and keeping the assumption only where all of its lines
then agree. A load, a parameter, an integer op, anything else is unknown and its casts stay.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import jit_functions
from kernelbot.integrate.inline_temporaries import cast_dtype

# Ops whose result is float32 where their (first) argument is.
_SAME_FLOAT = frozenset(
    {
        "tl.sum",
        "tl.max",
        "tl.min",
        "tl.rsqrt",
        "tl.sqrt",
        "tl.exp",
        "tl.exp2",
        "tl.log",
        "tl.abs",
        "tl.sigmoid",
        "tl.broadcast_to",
        "tl.reshape",
        "tl.maximum",
        "tl.minimum",
    }
)
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)
_FLOAT = "float32"
# What a kernel's constexpr parameter holds for this module: a Python number (a size, a block, an epsilon).
_NUMBER = "number"


def dropped_noop_casts(module: cst.Module) -> cst.Module:
    """`module` with each @triton.jit function's casts to their value's own dtype removed."""
    kernels = set(jit_functions(module))
    return module.visit(_DropNoopCastsTransformer(kernels)) if kernels else module


class _DropNoopCastsTransformer(cst.CSTTransformer):
    def __init__(self, kernels: set[str]) -> None:
        super().__init__()
        self.kernels = kernels

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # each kernel is rewritten whole in leave_FunctionDef

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if updated_node.name.value not in self.kernels:
            return updated_node
        return cst.ensure_type(updated_node.visit(_CastRemover(_name_dtypes(updated_node))), cst.FunctionDef)


class _CastRemover(cst.CSTTransformer):
    """Replaces `value.to(tl.D)` by `value` where `value` already has dtype D."""

    def __init__(self, dtypes: dict[str, str]) -> None:
        super().__init__()
        self.dtypes = dtypes

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        target = cast_dtype(updated_node)
        if not target:
            return updated_node
        value = cst.ensure_type(updated_node.func, cst.Attribute).value
        if _dtype(value, self.dtypes) != target:
            return updated_node
        # The value keeps its own parentheses only where it had some beyond the call's.
        return (
            value.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar) if updated_node.lpar else value
        )

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        """`x_out = (a * b).to(tl.float32)` becomes `x_out = a * b`: the parentheses served the call."""
        if updated_node.value is original_node.value:
            return updated_node
        return updated_node.with_changes(value=_unparenthesized(updated_node.value))

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        """So does a call's argument: `tl.store(ptr, (a * b).to(tl.float32))`."""
        if updated_node.value is original_node.value:
            return updated_node
        return updated_node.with_changes(value=_unparenthesized(updated_node.value))


def _unparenthesized(value: cst.BaseExpression) -> cst.BaseExpression:
    """`value` without the parentheses around an operation, where it stands alone (a whole right-hand side,
    a whole argument) and they change nothing."""
    if isinstance(value, cst.BinaryOperation | cst.UnaryOperation) and value.lpar:
        return value.with_changes(lpar=(), rpar=())
    return value


def _name_dtypes(kernel: cst.FunctionDef) -> dict[str, str]:
    """The dtype of each name every binding of which gives it the same one (module docstring), and
    `_NUMBER` for the constexpr parameters."""
    bindings: dict[str, list[cst.BaseExpression | None]] = {}
    for node in m.findall(kernel.body, m.Assign() | m.AugAssign() | m.AnnAssign() | m.For() | m.NamedExpr()):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                _bind(bindings, target.target, node.value if len(node.targets) == 1 else None)
        elif isinstance(node, cst.AnnAssign | cst.NamedExpr):
            _bind(bindings, node.target, node.value)
        elif isinstance(node, cst.AugAssign | cst.For):
            _bind(bindings, node.target, None)
    constexpr = m.Param(annotation=m.Annotation(m.Attribute(m.Name("tl"), m.Name("constexpr"))))
    constants = {
        cst.ensure_type(p, cst.Param).name.value: _NUMBER for p in m.findall(kernel.params, constexpr)
    }
    for param in m.findall(kernel.params, m.Param()):
        bindings.setdefault(cst.ensure_type(param, cst.Param).name.value, []).append(None)
    assumed: dict[str, str] = dict(constants)
    changed = True
    while changed:  # each name's dtype from any one line that tells it, given the others so far
        changed = False
        for name, values in bindings.items():
            if name in assumed or None in values:
                continue
            for value in values:
                dtype = _dtype(value, assumed) if value is not None else None
                if dtype:
                    assumed[name], changed = dtype, True
                    break
    changed = True
    while changed:  # ... kept only where every line of the name agrees with it
        changed = False
        for name in list(assumed):
            if name in constants:
                continue
            if any(v is None or _dtype(v, assumed) != assumed[name] for v in bindings[name]):
                del assumed[name]
                changed = True
    return assumed


def _bind(
    bindings: dict[str, list[cst.BaseExpression | None]],
    target: cst.BaseExpression,
    value: cst.BaseExpression | None,
) -> None:
    if isinstance(target, cst.Name):
        bindings.setdefault(target.value, []).append(value)
        return
    for name in m.findall(target, m.Name()):  # tuple targets: a dtype this module does not read
        bindings.setdefault(cst.ensure_type(name, cst.Name).value, []).append(None)


def _dtype(expr: cst.BaseExpression, names: dict[str, str]) -> str | None:
    """The dtype `expr` has, where the kernel's code says it; None where it does not."""
    if isinstance(expr, cst.Name):
        dtype = names.get(expr.value)
        return None if dtype == _NUMBER else dtype  # a number has no dtype of its own (`_is_number`)
    if isinstance(expr, cst.Subscript):
        return _dtype(expr.value, names)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
        # float32 with float32, or with a Python number, is float32 (narrower floats may promote).
        left, right = _dtype(expr.left, names), _dtype(expr.right, names)
        if {left, right} == {_FLOAT} or (left == _FLOAT and _is_number(expr.right, names)):
            return _FLOAT
        return _FLOAT if right == _FLOAT and _is_number(expr.left, names) else None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _FLOAT if _dtype(expr.expression, names) == _FLOAT else None
    if not isinstance(expr, cst.Call):
        return None
    cast = cast_dtype(expr)
    if cast:
        return cast
    func = _dotted(expr.func)
    args = [a.value for a in expr.args if a.keyword is None]
    if func == "tl.cast" and len(args) == 2:
        return _tl_dtype(args[1])
    if func == "tl.full" and len(args) == 3:
        return _tl_dtype(args[2])
    if func == "tl.where" and len(args) == 3:
        then, otherwise = _dtype(args[1], names), _dtype(args[2], names)
        if then == otherwise or (then == _FLOAT and _is_number(args[2], names)):
            return then
        return None
    if func in _SAME_FLOAT and args and _dtype(args[0], names) == _FLOAT:
        if func in ("tl.maximum", "tl.minimum") and (len(args) != 2 or _dtype(args[1], names) != _FLOAT):
            return None
        return _FLOAT
    return None


def _tl_dtype(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "tl":
        return expr.attr.value
    return None


def _is_number(expr: cst.BaseExpression, names: dict[str, str]) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    if isinstance(expr, cst.Name):
        return names.get(expr.value) == _NUMBER
    return isinstance(expr, cst.Float | cst.Integer)


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return f"{node.value.value}.{node.attr.value}"
    return node.value if isinstance(node, cst.Name) else ""
