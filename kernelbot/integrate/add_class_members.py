"""Transformer: adds statements (methods) to a class, right after one of its methods. Nothing of the class
that was there changes."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from kernelbot.integrate.errors import IntegrationError


class AddClassMembersTransformer(cst.CSTTransformer):
    def __init__(self, class_qualname: str, after: str, members: Sequence[cst.BaseStatement]) -> None:
        super().__init__()
        self.class_qualname, self.after, self.members = class_qualname, after, list(members)
        self.added = 0
        self._classes: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        qualname = ".".join(self._classes)
        self._classes.pop()
        if qualname != self.class_qualname:
            return updated_node
        body = list(updated_node.body.body)
        at = next(
            (i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == self.after),
            None,
        )
        if at is None:
            raise IntegrationError(f"{qualname} defines no method {self.after}")
        self.added += 1
        body[at + 1 : at + 1] = self.members
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))


def defines(owner: cst.ClassDef, name: str) -> bool:
    """Whether the class body itself defines `name` (a method, or an assigned attribute)."""
    for statement in owner.body.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and statement.name.value == name:
            return True
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets = (
                    [t.target for t in small.targets]
                    if isinstance(small, cst.Assign)
                    else [small.target]
                    if isinstance(small, cst.AnnAssign)
                    else []
                )
                if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                    return True
    return False
