"""Gatherer: the `typing` names a module's type hints read that the module itself does not bind.

The closure leaves hints out on purpose (gather_free_names): a reference starts with
`from __future__ import annotations`, so `ForwardBatch` in a hint never has to exist. The standard `typing`
names (`Optional`, `Union`, `Tuple`...) cost nothing to import, though, and importing them keeps the hints
evaluable for whoever reads them (typing.get_type_hints, a tool, a person): emit_reference adds the import.
"""

from __future__ import annotations

import typing

import libcst as cst

_TYPING_NAMES = frozenset(typing.__all__)


class GatherTypingNames(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.in_hints: set[str] = set()  # names read inside annotations
        self.bound: set[str] = set()  # names the module binds (imports, defs, classes, assignments)
        self._hint_depth = 0

    @classmethod
    def missing(cls, module: cst.Module) -> list[str]:
        """The `typing` names `module`'s hints read and nothing in it binds, sorted."""
        gatherer = cls()
        module.visit(gatherer)
        return sorted((gatherer.in_hints - gatherer.bound) & _TYPING_NAMES)

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self._hint_depth += 1

    def leave_Annotation(self, original_node: cst.Annotation) -> None:
        self._hint_depth -= 1

    def visit_Name(self, node: cst.Name) -> None:
        if self._hint_depth:
            self.in_hints.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # `torch.Tensor` or `typing.Optional` in a hint reads only its root name, not the attribute's.
        node.value.visit(self)
        return False

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        bound = node.asname.name if node.asname is not None else node.name
        root: cst.BaseExpression = bound
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name):
            self.bound.add(root.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bound.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.bound.add(node.name.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Name):
            self.bound.add(node.target.value)
