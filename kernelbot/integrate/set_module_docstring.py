"""Transformer: makes `text` the module's docstring (replacing one that is there) and puts `header` comment
lines (e.g. a copyright line) at the very top."""

from __future__ import annotations

import libcst as cst

from evolution.mutators.crossover.alike import is_docstring


class SetModuleDocstringTransformer(cst.CSTTransformer):
    def __init__(self, text: str, header: str = "") -> None:
        super().__init__()
        self.text = text
        self.header = header

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        docstring = cst.SimpleStatementLine([cst.Expr(cst.SimpleString(quoted(self.text)))])
        body = list(updated_node.body)
        if body and is_docstring(body[0]):
            docstring = docstring.with_changes(leading_lines=body[0].leading_lines)
            body[0] = docstring
        else:
            body.insert(0, docstring)
            if len(body) > 1:  # one blank line between the docstring and the code
                body[1] = body[1].with_changes(leading_lines=[cst.EmptyLine(), *body[1].leading_lines])
        header = list(updated_node.header)
        lines = [ln for ln in self.header.splitlines() if ln.strip()]
        present = {h.comment.value for h in header if h.comment is not None}
        new = [cst.EmptyLine(comment=cst.Comment(ln)) for ln in lines if ln not in present]
        return updated_node.with_changes(body=body, header=[*new, *header])


def quoted(text: str) -> str:
    """`text` as a triple-quoted literal (closing quotes on a line of their own when it spans several)."""
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').rstrip()
    return f'"""{body}\n"""' if "\n" in body else f'"""{body}"""'
