"""Source text of the values the emitter writes: literals of each dtype, and the checks and parentheses
that decide whether code can be used as an operand as it is (a name or a literal needs no binding).
"""

from __future__ import annotations

import ast
import re
import textwrap


def literal(value: float | int | bool, dtype: str) -> str:
    if dtype == "i1":
        return "1" if value else "0"
    if dtype in ("fp32", "fp64"):
        number = float(value)
        if number != number:
            return "float('nan')"
        if number in (float("inf"), float("-inf")):
            return "float('inf')" if number > 0 else "float('-inf')"
        return repr(number)
    return str(int(value))


def literal_value(code: str) -> float | int:
    text = code.strip("()")
    if "float(" in text:
        return float(text.replace("float(", "").rstrip(")").strip("'"))
    return float(text) if any(c in text for c in ".einf") else int(text)


def is_literal(code: str) -> bool:
    return bool(re.fullmatch(r"\(?-?[\d.]+(e[-+]?\d+)?\)?|float\('-?(inf|nan)'\)", code))


def is_simple(code: str) -> bool:
    return code.isidentifier() or is_literal(code)


def wrapped(code: str) -> str:
    if code.isidentifier() or (code.startswith("(") and code.endswith(")") and _balanced(code[1:-1])):
        return code
    return f"({code})"


def unwrapped(code: str) -> str:
    """`code` without parentheses around the whole of it (an argument needs none); `(a) * (b)` stays."""
    if code.startswith("(") and code.endswith(")") and _balanced(code[1:-1]):
        return code[1:-1]
    return code


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


_CLOSER = {"(": ")", "[": "]", "{": "}"}


def _split_top_level(text: str) -> list[str]:
    """`text` split at its commas outside brackets and strings."""
    parts, depth, quote, start = [], 0, "", 0
    for k, char in enumerate(text):
        if quote:
            quote = "" if char == quote and text[k - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _wrap(line: str, limit: int) -> list[str]:
    """One statement longer than `limit` broken after the opening bracket whose group runs to its end: its
    contents on one line of their own where they fit, else one item a line (as black and ruff write it);
    the line itself when it has no such group."""
    indent = line[: len(line) - len(line.lstrip())]
    depth, quote, opened = 0, "", -1
    for k, char in enumerate(line):
        if quote:
            quote = "" if char == quote and line[k - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char == "#":
            return [line]  # a comment: left as it is
        elif char in "([{":
            if depth == 0:
                opened = k
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0 and opened >= 0:
                tail = line[k + 1 :]
                if tail.strip() in ("", ":", ","):
                    items = _split_top_level(line[opened + 1 : k])
                    if len(items) < 2 and not (items and len(indent) + 4 + len(items[0]) < len(line)):
                        return [line]
                    head = [line[: opened + 1]]
                    inside = ", ".join(items)
                    if len(indent) + 4 + len(inside) <= limit:  # the contents fit on one line of their own
                        return [*head, f"{indent}    {inside}", f"{indent}{line[k]}{tail}"]
                    body = [f"{indent}    {item}," for item in items]
                    inner = [part for b in body for part in (_wrap(b, limit) if len(b) > limit else [b])]
                    return [*head, *inner, f"{indent}{line[k]}{tail}"]
                opened = -1
    return [line]


def wrap_long_lines(source: str, limit: int) -> str:
    """`source` with every code line over `limit` characters broken at its brackets (docstrings and
    comments are written within the limit where they are made)."""
    out: list[str] = []
    in_string = False
    for line in source.split("\n"):
        quotes = line.count('"""') + line.count("'''")
        if not in_string and len(line) > limit and quotes == 0:
            out.extend(_wrap(line, limit))
        else:
            out.append(line)
        if quotes % 2 == 1:
            in_string = not in_string
    return "\n".join(out)


def fit_docstrings(source: str, limit: int) -> str:
    """`source` with each function docstring that has a line over `limit` characters filled again within
    it (the building blocks' docstrings are written for the widest engine)."""
    lines = source.split("\n")
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and ast.get_docstring(node, clean=False) is not None:
            doc = node.body[0]
            start, end = doc.lineno - 1, doc.end_lineno or doc.lineno
            if any(len(line) > limit for line in lines[start:end]):
                spans.append((start, end, doc.col_offset, ast.get_docstring(node) or ""))
    for start, end, column, text in sorted(spans, reverse=True):
        indent = " " * column
        filled = textwrap.fill(
            " ".join(text.split()), limit - 3, initial_indent=f'{indent}"""', subsequent_indent=indent
        )
        lines[start:end] = f'{filled}"""'.split("\n")
    return "\n".join(lines)


_ASSIGN = re.compile(r"^(\s*)([A-Za-z_]\w*) = (.+)$")
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_NOT_INLINED = ("tl.load", "tl.store", "tl.atomic", "_kb_", "tl.arange", "tl.full", "tl.zeros")


def inline_single_use(text: str, limit: int, longest: int = 60) -> str:
    """A kernel's address temporaries (offsets, strided indices) read once, at the same indentation,
    inlined into their reader when it stays within `limit` characters: an engine's kernel writes
    `x_ptr + row * stride + cols` as one expression. Values keep their names; loads, block calls and
    aranges are never moved, nor anything past a statement that assigns a name it reads."""
    lines = text.split("\n")
    changed = True
    while changed:
        changed = False
        counts: dict[str, int] = {}
        for line in lines:
            for word in _WORD.findall(line.split("#", 1)[0]):
                counts[word] = counts.get(word, 0) + 1
        for i, line in enumerate(lines):
            match = _ASSIGN.match(line)
            if match is None or counts.get(match.group(2)) != 2:
                continue
            indent, name, expr = match.groups()
            if "offs" not in name and "stride" not in expr:
                continue  # only address arithmetic: values keep the names that say what they hold
            if len(expr) > longest or any(marker in expr for marker in _NOT_INLINED):
                continue
            reads = set(_WORD.findall(expr))
            use = _single_use(lines, i, indent, name, reads)
            if use is None:
                continue
            simple = re.fullmatch(r"[\w.]+(\[[^\]]*\])?", expr) is not None
            replacement = (expr if simple else wrapped(expr)).replace("\\", "\\\\")
            new = re.sub(rf"\b{name}\b", replacement, lines[use])
            if len(new) > limit:
                continue
            lines[use] = new
            del lines[i]
            changed = True
            break
    return "\n".join(lines)


def _single_use(lines: list[str], i: int, indent: str, name: str, reads: set[str]) -> int | None:
    """The line after `i` that reads `name`, when it is at `indent` and nothing in between (at any depth)
    assigns a name the expression reads or closes the block `i` is in."""
    for j in range(i + 1, len(lines)):
        line = lines[j]
        if line.strip() and len(line) - len(line.lstrip()) < len(indent):
            return None  # the block ended first
        if re.search(rf"\b{name}\b", line):
            same = len(line) - len(line.lstrip()) == len(indent)
            return j if same and not line.lstrip().startswith(("for ", "while ")) else None
        targets = set(_WORD.findall(line.split(" = ", 1)[0])) if " = " in line else set()
        if targets & reads:
            return None
    return None
