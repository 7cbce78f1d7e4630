"""Stateless questions the static checks (evaluators.static.checks) ask about one libcst node or one qualified
name: which rule a name falls under, whether a torch name is allowed in host code, what a decorator calls,
which variable an expression stores into, whether a value is a mutable container or a call mutates one, and
whether a try/except only guards imports. None of them depends on where in the candidate the node sits; the
visitor keeps that state (kernel depth, module-level containers) and decides what to flag.
"""

from __future__ import annotations

import libcst as cst

from evaluators.static.rules import ALLOWED_TORCH, ALLOWED_TORCH_PREFIXES, NAME_RULES

# Methods that change a list / dict / set / deque in place (storing into it without an assignment).
MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "clear",
        "add",
        "remove",
        "discard",
        "__setitem__",
        "appendleft",
    }
)
_IMPORT_FALLBACK_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})


def is_dotted_name(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def decorator_callee(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.func if isinstance(expr, cst.Call) else expr


def match_name_rule(name: str) -> tuple[str, str] | None:
    for prefix, kind, what in NAME_RULES:
        stem = prefix.rstrip(".")
        if name == stem or name.startswith(stem + "."):
            return kind, what
    return None


def allowed_torch(name: str) -> bool:
    if name in ALLOWED_TORCH or name.startswith(ALLOWED_TORCH_PREFIXES):
        return True
    import torch

    leaf = name.rsplit(".", 1)[-1]
    return name.count(".") == 1 and isinstance(getattr(torch, leaf, None), torch.dtype)


def is_mutable_container(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Dict, cst.List, cst.Set, cst.DictComp, cst.ListComp, cst.SetComp)):
        return True
    if isinstance(expr, cst.Call):
        name = cst.helpers.get_full_name_for_node(expr.func) or ""
        return name.rsplit(".", 1)[-1] in (
            "dict",
            "list",
            "set",
            "defaultdict",
            "OrderedDict",
            "deque",
            "Counter",
        )
    return False


def root_name(expr: cst.BaseExpression) -> str:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else ""


def is_import_fallback(node: cst.Try) -> bool:
    """A try whose body only imports and whose handlers only catch import errors: a version-compatibility
    import, not a compute fallback."""
    imports_only = all(
        isinstance(stmt, cst.SimpleStatementLine)
        and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
        for stmt in node.body.body
    )
    caught = {cst.helpers.get_full_name_for_node(h.type) if h.type else "" for h in node.handlers}
    return bool(imports_only and caught and caught <= _IMPORT_FALLBACK_ERRORS)
