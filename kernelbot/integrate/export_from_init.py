"""Codemod: exports a new module's function from its package's `__init__.py`: schedules
`from .<module> import <name>` and appends the name to a module-level `__all__` list or tuple when the file
has one (LMDeploy lists its kernels there)."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor


class ExportFromInitCommand(VisitorBasedCodemodCommand):
    DESCRIPTION = "Import a function in a package's __init__.py and list it in __all__."

    def __init__(self, context: CodemodContext, module: str, name: str) -> None:
        super().__init__(context)
        self.submodule = module  # relative to the package: "rms_norm_triton"
        self.name = name

    def visit_Module(self, node: cst.Module) -> None:
        AddImportsVisitor.add_needed_import(self.context, self.submodule, self.name, relative=1)

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        targets = updated_node.targets
        if len(targets) != 1 or not (
            isinstance(targets[0].target, cst.Name) and targets[0].target.value == "__all__"
        ):
            return updated_node
        listed = updated_node.value
        if not isinstance(listed, (cst.List, cst.Tuple)):
            return updated_node
        names = [e.value.evaluated_value for e in listed.elements if isinstance(e.value, cst.SimpleString)]
        if self.name in names:
            return updated_node
        elements = list(listed.elements)
        value = cst.SimpleString(f"{_quote(elements)}{self.name}{_quote(elements)}")
        if not elements:
            return updated_node.with_changes(value=listed.with_changes(elements=[cst.Element(value)]))
        # The new last element takes the old last one's comma (and so the line break before the bracket);
        # the old last one takes the separator the others use.
        separator = (
            elements[-2].comma if len(elements) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        last = elements[-1]
        elements[-1] = last.with_changes(comma=separator)
        elements.append(cst.Element(value, comma=last.comma))
        return updated_node.with_changes(value=listed.with_changes(elements=elements))


def _quote(elements: list[cst.BaseElement]) -> str:
    for element in elements:
        if isinstance(element.value, cst.SimpleString):
            return element.value.quote
    return '"'
