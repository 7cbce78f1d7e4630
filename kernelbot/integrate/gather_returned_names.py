"""Gatherer: what a function's return statements return, by name.

A kernel seeded from torch.compile's code returns Inductor's buffers (`return (buf1, buf2)`) where the
reference returned its own values (SGLang's RMSNorm: `return x, residual`); the module that ships names the
buffers after those. Each return statement of the function itself (not of a function or class defined in
it) is one tuple: the name at each position where it returns a plain name there, None where it returns
anything else (`h.to(x.dtype)`, `*rest`). `return x` is `("x",)`; a bare `return` is `()`.
"""

from __future__ import annotations

import libcst as cst


class GatherReturnedNamesVisitor(cst.CSTVisitor):
    def __init__(self, function: str) -> None:
        super().__init__()
        self.function = function
        self.returns: list[tuple[str | None, ...]] = []
        self._depth = 0  # 1 in the function's own body, more inside what it defines
        self._found = False

    @classmethod
    def of(cls, source: str, function: str) -> list[tuple[str | None, ...]]:
        """The returns of the module-level or nested function `function` of `source` (its first)."""
        visitor = cls(function)
        cst.parse_module(source).visit(visitor)
        return visitor.returns

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._depth:
            self._depth += 1
        elif node.name.value == self.function and not self._found:
            self._depth, self._found = 1, True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self._depth:
            self._depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self._depth:
            self._depth += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        if self._depth:
            self._depth -= 1

    def visit_Return(self, node: cst.Return) -> None:
        if self._depth != 1:
            return
        value = node.value
        if value is None:
            self.returns.append(())
        elif isinstance(value, cst.Tuple):
            self.returns.append(tuple(_name(e) for e in value.elements))
        else:
            self.returns.append((value.value if isinstance(value, cst.Name) else None,))


def _name(element: cst.BaseElement) -> str | None:
    if isinstance(element, cst.Element) and isinstance(element.value, cst.Name):
        return element.value.value
    return None
