"""Questions the static checks ask about one call in a candidate's host code: which literal arguments it
passes (so that `.to(torch.bool)` is judged with its dtype), whether a method name is also one of Python's
built-in types' (`seen.add(k)` on a set is no tensor add), and whether a function cached with
functools.lru_cache only reads device facts (LMDeploy's `get_device_props`) rather than keeping a buffer or a
result. What a tensor method or torch function does is guards.host_ops' answer.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from evaluators.static.rules import DEVICE_QUERY_PREFIXES

QualifiedNames = Callable[[cst.CSTNode], set[str]]

# Methods of Python's built-in types: on a receiver the static checks cannot type, `.add` / `.sort` /
# `.index` may be a set's or a list's; the runtime recorder sees what really ran.
BUILTIN_METHOD_NAMES = frozenset(
    name
    for kind in (list, dict, set, frozenset, str, bytes, tuple, int, float, complex)
    for name in dir(kind)
    if not name.startswith("_")
)
_NOT_LITERAL = object()


def literal_args(call: cst.Call, qualified: QualifiedNames) -> tuple | None:
    """The call's positional arguments when every one is a literal (a torch dtype, a string, None, a bool);
    None when any is not (or a keyword is passed)."""
    values = []
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            return None
        value = _literal(arg.value, qualified)
        if value is _NOT_LITERAL:
            return None
        values.append(value)
    return tuple(values)


def _literal(expr: cst.BaseExpression, qualified: QualifiedNames) -> object:
    import torch

    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value
    if isinstance(expr, cst.Name) and expr.value in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[expr.value]
    for name in qualified(expr):
        if name.startswith("torch.") and name.count(".") == 1:
            value = getattr(torch, name.split(".", 1)[1], None)
            if isinstance(value, torch.dtype):
                return value
    return _NOT_LITERAL


def string_arg(call: cst.Call, position: int) -> str | None:
    """A positional argument that is a plain string literal (`getattr(x, "add")`)."""
    if len(call.args) <= position:
        return None
    value = call.args[position].value
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return text if isinstance(text, str) else None
    return None


def caches_device_facts(function: cst.FunctionDef, qualified: QualifiedNames) -> bool:
    """Whether a cached function only reads device facts: every call it makes is a device query (or a
    builtin, or a method of a module-level table), and its parameters are only compared or handed to device
    queries, so it can neither create a tensor nor hand back one it was given."""
    params = {p.name.value for p in (*function.params.params, *function.params.kwonly_params)}
    visitor = _DeviceFactReader(params, qualified)
    function.body.visit(visitor)
    return visitor.only_device_facts


class _DeviceFactReader(cst.CSTVisitor):
    def __init__(self, params: set[str], qualified: QualifiedNames) -> None:
        super().__init__()
        self.params = params
        self.qualified = qualified
        self.only_device_facts = True
        self._allowed_depth = 0  # inside a comparison or a device query's arguments

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified(node.func)
        if names:
            ok = all(n.startswith(DEVICE_QUERY_PREFIXES) for n in names)
        elif isinstance(node.func, cst.Attribute):
            root = _root(node.func.value)
            ok = root != "" and root not in self.params
        else:
            ok = False
        if not ok:
            self.only_device_facts = False
        self._allowed_depth += 1 if ok and names else 0

    def leave_Call(self, original_node: cst.Call) -> None:
        names = self.qualified(original_node.func)
        if names and all(n.startswith(DEVICE_QUERY_PREFIXES) for n in names):
            self._allowed_depth -= 1

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._allowed_depth += 1

    def leave_Comparison(self, original_node: cst.Comparison) -> None:
        self._allowed_depth -= 1

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        return False  # rebinding a parameter (device = current_device()) reads nothing

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.params and self._allowed_depth == 0:
            self.only_device_facts = False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `props.major`: the attribute's name is no read of a parameter
        return False


def _root(expr: cst.BaseExpression) -> str:
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return expr.value if isinstance(expr, cst.Name) else ""


def preparation_text(module: cst.Module, call: cst.Call, method: str) -> str:
    """How the note of host preparation shows one call: 'x.contiguous()', and for a chain only the name it
    starts from and this call: 'x….float()'."""
    assert isinstance(call.func, cst.Attribute)
    receiver = " ".join(module.code_for_node(call.func.value).split())
    if "(" in receiver or len(receiver) > 30:
        receiver = _chain_root(call.func.value) + "…"
    args = ", ".join(" ".join(module.code_for_node(a.value).split()) for a in call.args)
    return f"{receiver}.{method}({args if len(args) <= 30 else '…'})"


def _chain_root(expr: cst.BaseExpression) -> str:
    """The name a chain of calls starts from: `x` of `x.contiguous().view(-1)`."""
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return expr.value if isinstance(expr, cst.Name) else "…"
