"""Which specialisation serves a call: the host tests what told the traced graphs apart.

A graph is chosen by the kinds of the arguments that differ between graphs (a tensor's dtype, None versus a
tensor, a bool or string value), by their layout (row-major or not) and by the guards Dynamo recorded that
fail on another graph's traced sizes (`self_n_groups > 0` on one graph, `<= 0` on the other). Inequalities
are preferred to equalities: a test
`n == 8` reads like a special case of one size.
"""

from __future__ import annotations

import sympy

from evolution.writers.fusion import symbols
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.model import Graph


def predicates(graphs: list[Graph]) -> list[tuple[list[str], list[str]]]:
    """Per graph: (size bindings the tests need, the tests), so that the first graph whose tests hold is the
    one traced for the call."""
    result = []
    for k, graph in enumerate(graphs):
        tests: list[str] = []
        needed: set[str] = set()
        for j, other in enumerate(graphs):
            if j == k:
                continue
            test = _kind_test(graph, other) or _layout_test(graph, other) or _guard_test(graph, other, needed)
            if test is None:
                raise LoweringError(
                    f"the cases {', '.join(graph.cases)} and {', '.join(other.cases)} trace to different "
                    "graphs that no argument kind or size test tells apart"
                )
            if test not in tests:
                tests.append(test)
        bindings = [f"{s} = {graph.symbols[s]}" for s in sorted(needed, key=lambda s: int(s[1:]))]
        result.append((bindings, tests))
    return result


def _kind_test(graph: Graph, other: Graph) -> str | None:
    for name, kind in graph.arg_kinds.items():
        theirs = other.arg_kinds.get(name)
        if theirs is None or theirs == kind:
            continue
        if kind.startswith("tensor:"):
            return f"isinstance({name}, torch.Tensor) and {name}.dtype == torch.{kind.split(':', 1)[1]}"
        if kind == "none":
            return f"{name} is None"
        if kind.startswith("bool:"):
            return f"{name} is {kind.split(':', 1)[1]}"
        if kind.startswith("str:"):
            return f"{name} == {kind.split(':', 1)[1]!r}"
    return None


def _layout_test(graph: Graph, other: Graph) -> str | None:
    """An argument row-major on one graph and not on the other (Dynamo guards strides): the kernel of the
    row-major one takes its strides from its sizes, so only a contiguous call may take it."""
    theirs = {p.source: p.meta for p in other.placeholders if p.kind == "tensor" and p.meta is not None}
    for p in graph.placeholders:
        other_meta = theirs.get(p.source)
        if p.kind != "tensor" or p.meta is None or other_meta is None or not p.source.isidentifier():
            continue
        if p.meta.contiguous != other_meta.contiguous:
            return f"{'' if p.meta.contiguous else 'not '}{p.source}.is_contiguous()"
    return None


def _guard_test(graph: Graph, other: Graph, needed: set[str]) -> str | None:
    failing = []
    for text in graph.guards:
        try:
            guard = symbols.parse(text)
            names = symbols.symbols_of(guard)
            if not names or not names <= set(graph.symbols) or not names <= set(other.hints):
                continue
            value = guard.subs({s: other.hints[s.name] for s in guard.free_symbols})
        except (symbols.SizeError, TypeError, ValueError):
            continue
        if value in (sympy.false, False):
            failing.append(guard)
    failing.sort(key=lambda g: isinstance(g, (sympy.Eq, sympy.Ne)))
    for guard in failing:
        try:
            text = _python(guard)
        except symbols.SizeError:
            continue
        needed |= symbols.symbols_of(guard)
        return text
    return None


_OPERATORS = {
    sympy.Eq: "==",
    sympy.Ne: "!=",
    sympy.Lt: "<",
    sympy.Le: "<=",
    sympy.Gt: ">",
    sympy.Ge: ">=",
}


def _python(guard: sympy.Basic) -> str:
    for kind, op in _OPERATORS.items():
        if isinstance(guard, kind):
            lhs, rhs = guard.args
            names = {s: s for s in symbols.symbols_of(guard)}
            return f"{symbols.python(lhs, names)} {op} {symbols.python(rhs, names)}"
    raise symbols.SizeError(f"a guard that is not a comparison: {guard}")
