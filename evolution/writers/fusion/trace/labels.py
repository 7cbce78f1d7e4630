"""The reference's own names for graph nodes: the variable a source statement assigns (`scores = ...`), or
writes in place (`q_embed.mul_(cos)`).

Dynamo keeps, on each node, the stack trace of the source line that made it. The innermost statement of the
reference's file around that line, when it assigns one plain name (`variance = x.pow(2).mean(...)`), names
the last node the statement made: the value the name holds. Nodes of a statement without a single target
(`return ...`, `x1, x2 = ...`) and nodes a decomposition made (no stack trace) keep no label; the code
writer names those after their op.

A statement that only gives a value a second name (`residual = x`, or `residual = x.to(orig_dtype)` where
x already has that dtype) makes no node; `source_aliases` keeps that name for the node the first one named,
so an output the reference returns under the second name (`return x, residual`) is named for it.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import Any

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ')
# Methods that return the tensor itself where it already has the dtype and layout asked for.
_SAME_VALUE_METHODS = frozenset({"to", "type", "type_as", "float", "half", "bfloat16", "contiguous"})


@functools.lru_cache(maxsize=32)
def _nodes(path: str) -> tuple[ast.AST, ...]:
    """Every node of the file at `path` (none where it cannot be read or parsed)."""
    try:
        return tuple(ast.walk(ast.parse(Path(path).read_text())))
    except (OSError, SyntaxError, ValueError):
        return ()


@functools.lru_cache(maxsize=32)
def statements(path: str) -> tuple[tuple[int, int, str], ...]:
    """(first line, last line, assigned name or "") of every statement of the file at `path`."""
    found = []
    for node in _nodes(path):
        if not isinstance(node, ast.stmt):
            continue
        target: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            target = node.target
        elif isinstance(node, ast.Expr):
            target = _in_place_receiver(node.value)  # `q_embed.mul_(cos)`: q_embed's next value
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            target = target.value  # `out[..., :half] = -x2` writes part of out: out's next value
        name = target.id if isinstance(target, ast.Name) else ""
        found.append((node.lineno, node.end_lineno or node.lineno, name))
    return tuple(found)


def _in_place_receiver(call: ast.expr) -> ast.Name | None:
    """The variable an in-place method call writes (`x.add_(y)`, PyTorch's trailing underscore)."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    method, receiver = call.func.attr, call.func.value
    in_place = method.endswith("_") and not method.startswith("_")
    return receiver if in_place and isinstance(receiver, ast.Name) else None


@functools.lru_cache(maxsize=32)
def alias_statements(path: str) -> tuple[tuple[int, str, str], ...]:
    """(line, new name, old name) of every `new = old` statement of the file at `path`, and of every `new =
    old.to(...)` one (a cast or layout method: an alias where the call made no node, as a cast to the dtype
    the value already has)."""
    found = []
    for node in _nodes(path):
        if not (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            continue
        root = node.value
        while (
            isinstance(root, ast.Call)
            and isinstance(root.func, ast.Attribute)
            and root.func.attr in _SAME_VALUE_METHODS
        ):
            root = root.func.value
        if isinstance(root, ast.Name):
            found.append((node.lineno, node.targets[0].id, root.id))
    return tuple(found)


def statement_of(stack_trace: str) -> tuple[str, int, str] | None:
    """(file, first line, assigned name) of the innermost statement of the trace's last frame."""
    frames = _FRAME.findall(stack_trace or "")
    if not frames:
        return None
    path, line_text = frames[-1]
    line = int(line_text)
    around = [s for s in statements(path) if s[0] <= line <= s[1]]
    if not around:
        return None
    first, _, name = min(around, key=lambda s: s[1] - s[0])
    return path, first, name


def source_labels(nodes: list[Any]) -> dict[str, str]:
    """FX node name -> the reference's variable holding its value, for the last node of each statement
    that assigns one name."""
    last: dict[tuple[str, int, tuple[Any, ...]], tuple[str, str]] = {}
    for node in nodes:
        if str(getattr(node, "target", "")) == "aten.copy_.default":
            continue  # an in-place op's write back into its input: the value is the node before it
        trace = node.meta.get("stack_trace") or ""
        statement = statement_of(trace)
        if statement is None:
            continue
        path, first, name = statement
        # A helper's statement runs once per call (rotate_half on the query, then on the key): each call,
        # told apart by the frames that called it, labels its own last node.
        callers = tuple(_FRAME.findall(trace)[:-1])
        last[(path, first, callers)] = (node.name, name)
    return {node: name for node, name in last.values() if name}


def source_aliases(nodes: list[Any], labels: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """FX node name -> the reference's other names for its value: each `new = old` statement of the file
    names the last labelled node (in graph order) whose statement is `old = ...` above it."""
    placed = []  # (node, path, first line of its statement), for the labelled nodes
    made = set()  # (path, first line) of each statement that made a node
    for node in nodes:
        statement = statement_of(node.meta.get("stack_trace") or "")
        if statement is not None:
            made.add(statement[:2])
            if node.name in labels:
                placed.append((node.name, statement[0], statement[1]))
    found: dict[str, list[str]] = {}
    for path in dict.fromkeys(p for _, p, _ in placed):
        for line, new, old in alias_statements(path):
            if (path, line) in made:
                continue  # a new value, not a second name
            held = [n for n, p, first in placed if p == path and first < line and labels[n] == old]
            if held and new != labels[held[-1]] and new not in found.get(held[-1], []):
                found.setdefault(held[-1], []).append(new)
    return {node: tuple(names) for node, names in found.items()}
