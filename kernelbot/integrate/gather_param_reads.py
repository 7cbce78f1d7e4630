"""Gatherer: which parameters of the reference's entry are read. A method's attribute that the extractor
turned into a parameter only because the method writes it (it comes back as an extra output) is not read,
and must not be passed in: on a fresh object it may not exist yet. The extra outputs are the bare names
in the returned tuples; those do not count as reads."""

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
        self._depth = 0  # > 0 inside the entry's body

    @classmethod
    def of(cls, source: str, entry: str, params: set[str]) -> set[str]:
        visitor = cls(entry, params)
        MetadataWrapper(cst.parse_module(source)).visit(visitor)
        return visitor.read

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._depth or node.name.value == self.entry:
            self._depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self._depth:
            self._depth -= 1

    def visit_Name(self, node: cst.Name) -> None:
        if not self._depth or node.value not in self.params:
            return
        if self.get_metadata(ExpressionContextProvider, node, None) != ExpressionContext.LOAD:
            return
        if not self._returned_as_output(node):
            self.read.add(node.value)

    def _returned_as_output(self, node: cst.Name) -> bool:
        element = self.get_metadata(ParentNodeProvider, node)
        if not isinstance(element, cst.Element):
            return False
        tuple_node = self.get_metadata(ParentNodeProvider, element)
        return isinstance(tuple_node, cst.Tuple) and isinstance(
            self.get_metadata(ParentNodeProvider, tuple_node), cst.Return
        )
