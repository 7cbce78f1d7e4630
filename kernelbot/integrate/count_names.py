"""How often code binds and reads each name: what a pass checks before it renames or drops a line.

A name counts as read where it is spelled and not bound: a call's keyword (`ROWS=`) and an attribute
(`x.shape`) are spellings of other things, never reads (as evolution's RenamedReads leaves them).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

_BINDERS = (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.CompFor)


class SpelledNamesVisitor(cst.CSTVisitor):
    """How often each name is spelled in a node, keywords and attributes aside."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._spelled: set[int] = set()

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._spelled.add(id(node.keyword))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._spelled.add(id(node.attr))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._spelled:
            self.counts[node.value] = self.counts.get(node.value, 0) + 1


def read_counts(node: cst.CSTNode) -> dict[str, int]:
    """How often each name is read in `node`: spelled, less the times it is bound."""
    visitor = SpelledNamesVisitor()
    node.visit(visitor)
    bound = binding_counts(node)
    return {name: n - bound.get(name, 0) for name, n in visitor.counts.items()}


def binding_counts(node: cst.CSTNode) -> dict[str, int]:
    """How often each name is bound in `node` (parameters, assignments, loop targets, anything)."""
    counts: dict[str, int] = {}
    for param in m.findall(node, m.Param()):
        name = cst.ensure_type(param, cst.Param).name.value
        counts[name] = counts.get(name, 0) + 1
    targets = m.findall(
        node, m.AssignTarget() | m.AugAssign() | m.AnnAssign() | m.For() | m.NamedExpr() | m.CompFor()
    )
    for binder in targets:
        if not isinstance(binder, _BINDERS):
            continue
        for bound in m.findall(binder.target, m.Name()):
            text = cst.ensure_type(bound, cst.Name).value
            counts[text] = counts.get(text, 0) + 1
    return counts
