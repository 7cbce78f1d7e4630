"""Gatherer: which parameters of the reference's entry have their incoming value read.

A method's attribute that the extractor turned into a parameter only because the method sets it (it comes
back as an extra output) is not read: it must not be passed in (on a fresh object it may not exist yet) and
the guard must not constrain it. So a parameter counts as read unless its first use in the entry is an
unconditional assignment (a top-level statement of the body), and the bare names in returned tuples (the
extra outputs) do not count as uses.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ExpressionContext, ExpressionContextProvider, MetadataWrapper, ParentNodeProvider


class GatherParamReadsVisitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (ExpressionContextProvider, ParentNodeProvider)

    def __init__(self, entry: str, params: set[str]) -> None:
        super().__init__()
        self.entry = entry
        self.params = params
        self.read: set[str] = set()
        self._seen: set[str] = set()
        self._body: cst.BaseSuite | None = None
        self._depth = 0  # > 0 inside the entry's body

    @classmethod
    def of(cls, source: str, entry: str, params: set[str]) -> set[str]:
        visitor = cls(entry, params)
        MetadataWrapper(cst.parse_module(source)).visit(visitor)
        return visitor.read

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._depth:
            self._depth += 1
        elif node.name.value == self.entry:
            self._depth, self._body = 1, node.body

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self._depth:
            self._depth -= 1

    def visit_Name(self, node: cst.Name) -> None:
        if not self._depth or node.value not in self.params or node.value in self._seen:
            return
        if isinstance(self.get_metadata(ParentNodeProvider, node), cst.Param):  # the signature itself
            return
        context = self.get_metadata(ExpressionContextProvider, node, None)
        if context is None or self._returned_as_output(node):
            return
        self._seen.add(node.value)
        if context != ExpressionContext.STORE or not self._unconditional_assignment(node):
            self.read.add(node.value)

    def _returned_as_output(self, node: cst.Name) -> bool:
        element = self.get_metadata(ParentNodeProvider, node)
        if not isinstance(element, cst.Element):
            return False
        tuple_node = self.get_metadata(ParentNodeProvider, element)
        return isinstance(tuple_node, cst.Tuple) and isinstance(
            self.get_metadata(ParentNodeProvider, tuple_node), cst.Return
        )

    def _unconditional_assignment(self, node: cst.Name) -> bool:
        """`name = <not name>` as a statement directly in the entry's body (not under if/for/with/try)."""
        target = self.get_metadata(ParentNodeProvider, node)
        assign = (
            self.get_metadata(ParentNodeProvider, target) if isinstance(target, cst.AssignTarget) else None
        )
        if not isinstance(assign, cst.Assign) or _mentions(assign.value, node.value):
            return False  # the right-hand side runs first: `x = f(x)` reads x
        line = self.get_metadata(ParentNodeProvider, assign)
        return self.get_metadata(ParentNodeProvider, line) is self._body


def _mentions(expression: cst.BaseExpression, name: str) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            found = found or node.value == name

    expression.visit(_Find())
    return found
