"""Triton building blocks the generated kernels call, kept as ordinary modules of @triton.jit functions
(named `_kb_*`) so that tests import and run them directly; a candidate cannot import kernelbot, so the
generator copies the source of every block a kernel calls (and the blocks those call) into the candidate.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

BLOCK_PREFIX = "_kb_"  # every building block's name starts with it
_FILES = ("arith.py", "keys.py", "topk.py", "sort.py", "scan.py", "gather.py")
_CALLED = re.compile(rf"\b({BLOCK_PREFIX}\w+)\b")


@functools.lru_cache(maxsize=1)
def _blocks() -> dict[str, tuple[str, frozenset[str]]]:
    """name -> (source text with its decorator, names of other blocks it calls), in file order."""
    found: dict[str, tuple[str, frozenset[str]]] = {}
    for name in _FILES:
        path = Path(__file__).with_name(name)
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith(BLOCK_PREFIX):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
                source = "\n".join(lines[start : node.end_lineno])
                calls = frozenset(n for n in _CALLED.findall(source) if n != node.name)
                found[node.name] = (source, calls)
    return found


def used_by(code: str) -> list[str]:
    """The blocks `code` calls, with the blocks they call, in a definition order that compiles."""
    table = _blocks()
    wanted: set[str] = set()
    pending = [n for n in _CALLED.findall(code) if n in table]
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        pending.extend(n for n in table[name][1] if n in table)
    return [name for name in table if name in wanted]


def source_of(names: list[str]) -> list[str]:
    table = _blocks()
    return [table[name][0] for name in names]


def names() -> list[str]:
    return list(_blocks())
