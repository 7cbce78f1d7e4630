"""Reading an ATen node's arguments the way ATen does: negative dims count from the end, an argument may come
positionally or by keyword, and slice bounds are clamped to the dim (a huge int means "to the end"). Shared by
the views, gathers and assembled tensors, whose ops take the same arguments.
"""

from __future__ import annotations

from typing import Any

import sympy

from evolution.writers.fusion import symbols
from evolution.writers.fusion.evaluate import Evaluator
from evolution.writers.fusion.model import Node

_END = 2**62  # ATen spells "to the end" as a huge int (9223372036854775807)


def normal_dim(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def node_arg(node: Node, position: int, name: str, default: object = None) -> Any:
    if len(node.args) > position:
        return node.args[position]
    return node.kwargs.get(name, default)


def slice_bounds(
    ev: Evaluator, size: sympy.Expr, start: object, end: object, step: object
) -> tuple[sympy.Expr, sympy.Expr, sympy.Expr]:
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
