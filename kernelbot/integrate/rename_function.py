"""Transformer: renames a module-level function and every reference to it in the module (the candidate's
entry becomes a public name that says what it is)."""

from __future__ import annotations

import libcst as cst


class RenameFunctionTransformer(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old = old
        self.new = new
        self._skip: set[int] = set()  # Names that are attribute members or keywords, not references

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skip.add(id(node.keyword))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if updated_node.value == self.old and id(original_node) not in self._skip:
            return updated_node.with_changes(value=self.new)
        return updated_node
