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
        # AddImportsVisitor cannot tell a relative import is there already without the package's name.
        if not any(_imports(statement, self.submodule, self.name) for statement in node.body):
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
        last = elements[-1]
        if _one_per_line(listed):
            # One element per line: the new last one takes the old last one's comma (and the line break
            # before the bracket); the old last one takes the separator the others use.
            if len(elements) > 1:
                separator = elements[-2].comma
            else:
                separator = cst.Comma(whitespace_after=_opening_whitespace(listed))
            elements[-1] = last.with_changes(comma=separator)
            elements.append(cst.Element(value, comma=last.comma))
        else:
            elements[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            elements.append(cst.Element(value))
        return updated_node.with_changes(value=listed.with_changes(elements=elements))


def _imports(statement: cst.BaseStatement, module: str, name: str) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if (
            isinstance(small, cst.ImportFrom)
            and len(small.relative) == 1
            and isinstance(small.module, cst.Name)
            and small.module.value == module
            and not isinstance(small.names, cst.ImportStar)
            and any(alias.evaluated_name == name and alias.asname is None for alias in small.names)
        ):
            return True
    return False


def _one_per_line(listed: cst.List | cst.Tuple) -> bool:
    """Whether the closing bracket sits on its own line (the exploded layout formatters keep)."""
    if isinstance(listed, cst.List):
        closing = listed.rbracket.whitespace_before
    else:
        closing = listed.rpar[0].whitespace_before if listed.rpar else cst.SimpleWhitespace("")
    last = listed.elements[-1].comma
    return isinstance(closing, cst.ParenthesizedWhitespace) or (
        isinstance(last, cst.Comma) and isinstance(last.whitespace_after, cst.ParenthesizedWhitespace)
    )


def _opening_whitespace(listed: cst.List | cst.Tuple) -> cst.BaseParenthesizableWhitespace:
    if isinstance(listed, cst.List):
        return listed.lbracket.whitespace_after
    return listed.lpar[0].whitespace_after if listed.lpar else cst.SimpleWhitespace(" ")


def _quote(elements: list[cst.BaseElement]) -> str:
    for element in elements:
        if isinstance(element.value, cst.SimpleString):
            return element.value.quote
    return '"'
