"""Transformer: declares a backend in an op class's `capabilities` mapping (SGLang's BaseFusedOp contract,
and the example engine's): one `key: value` entry added to the class's own `capabilities = {...}` literal, or,
when the class has none, `capabilities = {key: value}` after its docstring and leading class attributes."""

from __future__ import annotations

import libcst as cst

from kernelbot.integrate.errors import IntegrationError


class DeclareCapabilityTransformer(cst.CSTTransformer):
    def __init__(self, class_qualname: str, key: str, value: str) -> None:
        super().__init__()
        self.class_qualname, self.key, self.value = class_qualname, key, value
        self.declared = 0
        self._classes: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        qualname = ".".join(self._classes)
        self._classes.pop()
        if qualname != self.class_qualname:
            return updated_node
        block = updated_node.body
        if not isinstance(block, cst.IndentedBlock):
            raise IntegrationError(
                f"{qualname} is a one-line class: kernelbot cannot declare capabilities in it"
            )
        body: list[cst.BaseStatement] = list(block.body)
        for i, statement in enumerate(body):
            assignment = _capabilities_assignment(statement)
            if assignment is None:
                continue
            if not isinstance(assignment.value, cst.Dict):
                raise IntegrationError(f"{qualname}.capabilities is not a dict literal kernelbot can extend")
            keys = [
                cst.Module([]).code_for_node(e.key)
                for e in assignment.value.elements
                if isinstance(e, cst.DictElement)  # not a `**spread`
            ]
            if self.key in keys:
                raise IntegrationError(f"{qualname}.capabilities already declares {self.key}")
            element = cst.ensure_type(
                cst.parse_expression(f"{{{self.key}: {self.value}}}"), cst.Dict
            ).elements[0]
            elements = list(assignment.value.elements)
            if elements and elements[-1].comma is cst.MaybeSentinel.DEFAULT:
                elements[-1] = elements[-1].with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
            new_value = assignment.value.with_changes(elements=[*elements, element])
            body[i] = cst.ensure_type(
                statement.deep_replace(assignment.value, new_value), cst.SimpleStatementLine
            )
            break
        else:
            at = 0
            while at < len(body) and isinstance(body[at], cst.SimpleStatementLine):
                at += 1  # after the docstring and the class attributes that open the body
            body.insert(at, cst.parse_statement(f"capabilities = {{{self.key}: {self.value}}}\n"))
        self.declared += 1
        return updated_node.with_changes(body=block.with_changes(body=body))


def _capabilities_assignment(statement: cst.BaseStatement) -> cst.Assign | cst.AnnAssign | None:
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for small in statement.body:
        if isinstance(small, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == "capabilities" for t in small.targets
        ):
            return small
        if (
            isinstance(small, cst.AnnAssign)
            and isinstance(small.target, cst.Name)
            and small.target.value == "capabilities"
            and small.value is not None
        ):
            return small
    return None
