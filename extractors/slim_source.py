"""Blanks out the bodies of module-level functions and classes the closure will not copy, so LibCST's
metadata passes (the slow part of extraction: seconds for SGLang's 3,000-line modules) run over a fraction
of the file. Lines are kept in place (bodies become blank lines), so every line number stays true."""

from __future__ import annotations

import ast


def slim_source(source: str, keep: set[str]) -> tuple[str, set[str]]:
    """The source with unneeded top-level def/class bodies emptied, and the names that were emptied."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source, set()
    lines = source.splitlines(keepends=True)
    emptied: set[str] = set()
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or stmt.name in keep:
            continue
        first = stmt.body[0]
        decorators = getattr(first, "decorator_list", [])
        start = min([first.lineno, *(d.lineno for d in decorators)])
        end = stmt.end_lineno or first.lineno
        if start <= stmt.lineno or end < start:
            continue  # body on the def line itself: leave it
        if _opens_inside(lines, stmt.lineno, start):
            continue
        indent = " " * first.col_offset
        lines[start - 1] = f"{indent}...\n"
        for i in range(start, end):
            lines[i] = "\n"
        emptied.add(stmt.name)
    return "".join(lines), emptied


def _opens_inside(lines: list[str], def_line: int, body_line: int) -> bool:
    """True when the body's first line continues something (a backslash) — not worth the risk."""
    return lines[body_line - 2].rstrip("\n").endswith("\\")
