"""Transformers of module-level functions' docstrings: one made `text` for the function `name` (replacing one
that is there), and the ones that start with a given text dropped. The kernel's entry says what it runs in
the engine's own terms, not the search's: the fusion writer's docstrings name the task's entry and the cases
it was traced on."""

from __future__ import annotations

import libcst as cst

from kernelbot.integrate.set_module_docstring import is_docstring, quoted


class SetFunctionDocstringTransformer(cst.CSTTransformer):
    def __init__(self, name: str, text: str) -> None:
        super().__init__()
        self.name = name
        self.text = text
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._depth += 1
        return self._depth == 1  # module-level functions only; their nested ones keep theirs

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._depth -= 1
        if self._depth or updated_node.name.value != self.name:
            return updated_node
        if not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        docstring = cst.SimpleStatementLine([cst.Expr(cst.SimpleString(quoted(self.text)))])
        body = list(updated_node.body.body)
        if body and is_docstring(body[0]):
            first = cst.ensure_type(body[0], cst.SimpleStatementLine)
            body[0] = docstring.with_changes(leading_lines=first.leading_lines)
        else:
            body.insert(0, docstring)
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))


class DropDocstringsTransformer(cst.CSTTransformer):
    """Drops the docstring of every module-level function whose docstring starts with `start`."""

    def __init__(self, start: str) -> None:
        super().__init__()
        self.start = start

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # the module level only

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        doc = updated_node.get_docstring(clean=False)
        body = updated_node.body
        if doc is None or not doc.startswith(self.start) or not isinstance(body, cst.IndentedBlock):
            return updated_node
        if len(body.body) < 2:  # a function of its docstring alone keeps it (a body cannot be empty)
            return updated_node
        return updated_node.with_changes(body=body.with_changes(body=body.body[1:]))
