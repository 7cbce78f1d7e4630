"""The reference's signature as a candidate writes it: its entry function read from reference.py
(`entry_function`), and its defaults made to stand on their own (`resolve_defaults`).

A reference's defaults often name its module's constants (`topk: int = TOP_K`), enum members
(`mode=Mode.FAST`) or torch dtypes. The candidate is a module of its own: a name it does not define fails at
import, so every seed would fail. Each default is kept as written when the candidate can evaluate it (a
literal, `torch.float32`), the constants it names are defined with the values the reference's module gives
them (keeping the reference's names), an enum class is redefined from its members, and any other value is
inlined as a literal. A default that is none of these (an object the candidate cannot build) is refused in
one sentence.
"""

from __future__ import annotations

import ast
import builtins
import enum
import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evolution.writers.tracing.errors import TraceError

_CANDIDATE_GLOBALS = {"torch", "triton", "tl", *dir(builtins)}


def entry_function(path: Path, entry: str) -> ast.FunctionDef:
    """The top-level `def entry(...)` of the reference's source file (TraceError when there is none)."""
    tree = ast.parse(path.read_text())
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None)
    if fn is None:
        raise TraceError(f"{path} defines no top-level function {entry}")
    return fn


def literal_text(value: object) -> str | None:
    """Python source that evaluates to `value` without imports (None when there is none)."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if isinstance(value, (tuple, list)):
        items = [literal_text(v) for v in value]
        if any(i is None for i in items):
            return None
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"  # type: ignore[arg-type]
        return "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
    return None


def _torch_text(value: object) -> str | None:
    import torch

    return str(value) if isinstance(value, torch.dtype) else None  # "torch.float32"


def _enum_class(cls: type[enum.Enum]) -> str:
    base = "enum.IntEnum" if issubclass(cls, enum.IntEnum) else "enum.Enum"
    lines = [f"class {cls.__name__}({base}):"]
    for member in cls:
        text = literal_text(member.value)
        if text is None:
            raise TraceError(f"the enum {cls.__name__} has a member that is not a literal ({member!r})")
        lines.append(f"    {member.name} = {text}")
    return "\n".join(lines)


class _Resolver:
    """Collects the module statements the defaults need; rewrites a default the candidate cannot read."""

    def __init__(self, reference: Callable[..., Any], inline: bool) -> None:
        self.inline = inline
        self.module_globals: dict[str, Any] = getattr(reference, "__globals__", {})
        self.constants: dict[str, str] = {}  # name -> its defining statement, in first-use order
        self.needs_enum = False

    def default(self, parameter: str, node: ast.expr, value: object) -> ast.expr:
        try:
            ast.literal_eval(node)
            return node
        except ValueError:
            pass
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        unknown = names - _CANDIDATE_GLOBALS
        if not unknown:
            return node  # torch.float32, float("inf"): the candidate reads them as they are
        if not self.inline and all(self._define(name) for name in sorted(unknown)):
            return node  # TOP_K, Mode.FAST: defined in the candidate under the reference's names
        for text in (literal_text(value), _torch_text(value)):
            if text is not None:
                return ast.parse(text, mode="eval").body
        raise TraceError(
            f"the default of {parameter} ({ast.unparse(node)}) is a {type(value).__name__} that a kernel "
            "module cannot define"
        )

    def _define(self, name: str) -> bool:
        if name in self.constants:
            return True
        if name not in self.module_globals:
            return False
        value = self.module_globals[name]
        if isinstance(value, type) and issubclass(value, enum.Enum) and value.__name__ == name:
            self.constants[name] = _enum_class(value)
            self.needs_enum = True
            return True
        text = literal_text(value)
        if text is None:
            return False
        self.constants[name] = f"{name} = {text}"
        return True

    def statements(self) -> tuple[str, ...]:
        return (*(["import enum"] if self.needs_enum else []), *self.constants.values())


def resolve_defaults(
    args: ast.arguments, reference: Callable[..., Any], *, inline: bool = False
) -> tuple[str, ...]:
    """Rewrite `args`' defaults in place so that a candidate can evaluate them; returns the module
    statements they need (constant definitions, enum classes), in order. `inline`: values only, no
    statements (a writer that has no place for them)."""
    resolver = _Resolver(reference, inline)
    try:
        parameters = inspect.signature(reference).parameters
    except (TypeError, ValueError):
        return ()
    positional = [*args.posonlyargs, *args.args]
    with_default = positional[len(positional) - len(args.defaults) :]
    for k, argument in enumerate(with_default):
        param = parameters.get(argument.arg)
        if param is not None and param.default is not inspect.Parameter.empty:
            args.defaults[k] = resolver.default(argument.arg, args.defaults[k], param.default)
    for k, (argument, node) in enumerate(zip(args.kwonlyargs, args.kw_defaults, strict=True)):
        param = parameters.get(argument.arg)
        if node is not None and param is not None and param.default is not inspect.Parameter.empty:
            args.kw_defaults[k] = resolver.default(argument.arg, node, param.default)
    return resolver.statements()
