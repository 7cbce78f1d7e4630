"""Sizes the code needs equal, solved together: every pair of tied sizes (`x.shape[-1] == hidden_size`, a
matmul's inner dimensions, elementwise partners aligned from the right) is united, and each group takes the
expression of its most confident member (written in the code > named > guessed). A tensor with nothing to
go on first takes the whole shape of its elementwise partner."""

from __future__ import annotations

from extractors.drafting.assignment import ArgDraft
from extractors.drafting.facts import DimRef, IntRef, Ref, UseFacts
from extractors.drafting.shape_sources import DEFAULT, NAMED, WEAK

Node = tuple[str, int]  # (argument, axis) for a tensor dimension, (argument, -999) for an int's value
_INT_AXIS = -999


def solve_ties(args: dict[str, ArgDraft], facts: UseFacts) -> None:
    """Unite every pair of tied sizes; each group takes the expression of its most confident member."""
    parent: dict[Node, Node] = {}

    def find(node: Node) -> Node:
        while parent.setdefault(node, node) != node:
            node = parent[node]
        return node

    for tie in facts.ties:  # a tensor with nothing to go on takes the shape of its elementwise partner
        first, second = args.get(tie.a.param), args.get(tie.b.param)
        if (
            tie.firm
            or first is None
            or second is None
            or "tensor" not in first.kinds
            or "tensor" not in second.kinds
        ):
            continue
        for weak, strong in ((first, second), (second, first)):
            if max(weak.confidence, default=0) == DEFAULT and max(strong.confidence, default=0) > DEFAULT:
                weak.dims, weak.confidence = list(strong.dims), list(strong.confidence)
                weak.why.append(f"shape of {strong.name} ({tie.why})")
    why: dict[Node, str] = {}
    for tie in sorted(facts.ties, key=lambda t: not t.firm):
        for a, b in _pairs(tie.a, tie.b, args, tie.firm):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[ra] = rb
                why[a], why[b] = f"{_label(b)} ({tie.why})", f"{_label(a)} ({tie.why})"
    groups: dict[Node, list[Node]] = {}
    for node in list(parent):
        groups.setdefault(find(node), []).append(node)
    for members in groups.values():
        best = max(members, key=lambda n: (_get(args, n)[1], n[1] != _INT_AXIS))
        expression, confidence = _get(args, best)
        if expression is None:
            continue
        for node in members:
            current, level = _get(args, node)
            if (current != expression and level < max(confidence, WEAK + 1)) or current is None:
                _set(args, node, expression, confidence)
                args[node[0]].why.append(f"size tied to {why.get(node, _label(best))}")


def _pairs(a: Ref, b: Ref, args: dict[str, ArgDraft], firm: bool) -> list[tuple[Node, Node]]:
    na, nb = _node(a, args), _node(b, args)
    if na is None or nb is None:
        return []
    if firm or not (isinstance(a, DimRef) and isinstance(b, DimRef)):
        return [(na, nb)]
    # elementwise partners: align their dimensions from the right
    ra, rb = len(args[a.param].dims), len(args[b.param].dims)
    return [((a.param, ra - i), (b.param, rb - i)) for i in range(1, min(ra, rb) + 1)]


def _node(ref: Ref, args: dict[str, ArgDraft]) -> Node | None:
    arg = args.get(ref.param)
    if arg is None:
        return None
    if isinstance(ref, IntRef):
        return (ref.param, _INT_AXIS) if arg.kind == "int" else None
    if arg.kind != "tensor" or not -len(arg.dims) <= ref.axis < len(arg.dims):
        return None
    return (ref.param, ref.axis % len(arg.dims))


def _get(args: dict[str, ArgDraft], node: Node) -> tuple[str | None, int]:
    arg = args[node[0]]
    if node[1] == _INT_AXIS:
        value = arg.value if isinstance(arg.value, str) else None
        return value, (NAMED if value is not None else DEFAULT)
    return arg.dims[node[1]], arg.confidence[node[1]]


def _set(args: dict[str, ArgDraft], node: Node, expression: str, confidence: int) -> None:
    arg = args[node[0]]
    if node[1] == _INT_AXIS:
        arg.value = expression
    else:
        arg.dims[node[1]], arg.confidence[node[1]] = expression, confidence


def _label(node: Node) -> str:
    return node[0] if node[1] == _INT_AXIS else f"{node[0]}.shape[{node[1]}]"


def dim_expression(args: dict[str, ArgDraft], ref: DimRef) -> str | None:
    node = _node(ref, args)
    return _get(args, node)[0] if node is not None else None
