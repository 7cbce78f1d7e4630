"""Evaluates, at extraction time, what `__init__` computes from the literal defaults of its parameters, so
that an attribute built through a helper of the class's own module (`self.stride = _tuplify(stride, 2)`) or
under an `if` that those defaults decide (`if isinstance(padding, str): ... else: self.padding =
_tuplify(padding, 2)`) gets the literal value the constructor would give it.

Only plain data comes out: an expression is evaluated with the parameters' and earlier attributes' literal
values, a small set of pure builtins and the module's own top-level functions (defined from their source, with
nothing else of the module: a helper that needs an import or a global fails and the value stays unknown). A
result is kept only where its `repr` reads back as the same literal.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

import libcst as cst

UNKNOWN = object()

# Pure builtins a shape or tuple helper uses; no import, no I/O, no attribute access by name.
_SAFE_BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "isinstance", "len", "tuple", "list", "dict", "set", "frozenset", "int", "float", "str", "bool",
        "range", "min", "max", "abs", "sum", "any", "all", "zip", "enumerate", "reversed", "sorted",
        "divmod", "round", "None", "True", "False", "AssertionError", "ValueError", "TypeError",
        "NotImplementedError", "KeyError", "IndexError",
    )
    if hasattr(builtins, name)
}  # fmt: skip


def literal_value(value: Any) -> Any:
    """`value` where it is plain data that reads back from its `repr`; UNKNOWN otherwise."""
    try:
        text = repr(value)
        if len(text) > 10_000:
            return UNKNOWN
        back = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return UNKNOWN
    return value if back == value and type(back) is type(value) else UNKNOWN


class _Self:
    """`self` while `__init__` runs: only the attributes whose literal value is known so far."""

    def __init__(self, attrs: dict[str, Any]) -> None:
        self.__dict__.update(attrs)


class InitEvaluator:
    def __init__(self, module: cst.Module, self_name: str, params: dict[str, Any]) -> None:
        self.module = module
        self.self_name = self_name
        self.names: dict[str, Any] = {k: v for k, v in params.items() if v is not UNKNOWN}
        self.attrs: dict[str, Any] = {}
        self._helpers: dict[str, Any] | None = None

    def forget(self, name: str) -> None:
        self.names.pop(name, None)

    def forget_attr(self, attr: str) -> None:
        self.attrs.pop(attr, None)

    def evaluate(self, node: cst.BaseExpression) -> Any:
        """The expression's literal value, or UNKNOWN."""
        try:
            text = self.module.code_for_node(node).strip()
            code = compile(ast.parse(text, mode="eval"), "<__init__>", "eval")
        except SyntaxError:
            return UNKNOWN
        scope = {**self.helpers(), **self.names, self.self_name: _Self(dict(self.attrs))}
        try:
            out = eval(code, {"__builtins__": _SAFE_BUILTINS, **scope})  # plain data and own helpers only
        except Exception:  # needs something not known here (an import, a global, a tensor)
            return UNKNOWN
        return literal_value(out)

    def condition(self, node: cst.BaseExpression) -> bool | None:
        """The `if` test's truth for the default arguments, or None where it cannot be decided."""
        out = self.evaluate(node)
        return None if out is UNKNOWN else bool(out)

    def helpers(self) -> dict[str, Any]:
        """The module's top-level functions without decorators, each defined from its own source in one
        namespace of pure builtins (so that helpers can call each other, and nothing else)."""
        if self._helpers is None:
            namespace: dict[str, Any] = {"__builtins__": _SAFE_BUILTINS}
            for stmt in self.module.body:
                if isinstance(stmt, cst.FunctionDef) and not stmt.decorators and stmt.asynchronous is None:
                    try:
                        exec(compile(self.module.code_for_node(stmt.with_changes(returns=None, params=_bare(
                            stmt.params))), "<helper>", "exec"), namespace)  # fmt: skip
                    except Exception:  # a default that needs a global: not defined
                        continue
            namespace.pop("__builtins__")
            self._helpers = namespace
        return self._helpers


def _bare(params: cst.Parameters) -> cst.Parameters:
    """Parameters without annotations: their names (`torch.Tensor`) are not defined in the namespace."""

    def strip(p: cst.Param) -> cst.Param:
        return p.with_changes(annotation=None)

    star = params.star_arg
    return params.with_changes(
        params=[strip(p) for p in params.params],
        posonly_params=[strip(p) for p in params.posonly_params],
        kwonly_params=[strip(p) for p in params.kwonly_params],
        star_arg=strip(star) if isinstance(star, cst.Param) else star,
        star_kwarg=strip(params.star_kwarg) if params.star_kwarg is not None else None,
    )
