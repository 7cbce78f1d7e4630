"""A barrier between a kernel's reads of a tensor and its in-place writes to it at other offsets.

An in-place op that reads a tensor at shifted offsets before overwriting it (LMDeploy's rotary embedding:
`rotate_half(query) * sin` reads the other half of each head, then `query.mul_(cos).add_(...)` writes every
element) is written as loads of the row at both offsets and a store at the first. Each lane of the program
loads and stores its own elements, but the shifted load of one lane reads what another lane stores, and
nothing orders the two: a warp that runs ahead stores before a slower warp has loaded. On the H200 such
kernels came out wrong on 1 to 23 elements of 16 million (0.04-0.10 off) in about half of their
evaluations, and passed in the others. `tl.debug_barrier()` before the store makes every lane's loads
happen first; it is placed only where a tensor is stored after a load of it at other offsets, in the same
block or before it (a plain elementwise in-place update reads and writes each element in the same lane and
needs none). Reads that would see another part of the computation's writes are refused earlier
(`rows.check_cross_reads`).

The offsets are compared as the writer spells them (one name per offset tile, `query_offs`), which is how
`memory.py` emits every load and store (`pointer + offsets`).
"""

from __future__ import annotations

import ast

from evolution.writers.fusion.region import Block

BARRIER = "tl.debug_barrier()"
_WHY = "# In place: other lanes load what the stores below overwrite, so every load comes first"


def barriers_explained(text: str, line_length: int) -> str:
    """`text` (a kernel) with a comment above each barrier, which a reader would otherwise take for a
    debugging leftover."""
    lines = text.splitlines()
    out: list[str] = []
    for line in lines:
        indent = line[: len(line) - len(line.lstrip())]
        explained = out and out[-1].strip() == _WHY
        if line.strip() == BARRIER and not explained and len(indent + _WHY) <= line_length:
            out.append(indent + _WHY)
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def fence_in_place_stores(prologue: list[str], roots: list[Block]) -> None:
    """Insert a barrier before each store into a tensor that the kernel loaded at other offsets since the last
    barrier; `prologue` (hoisted statements, run first) and `roots` (the regions' bodies) in program order."""
    loaded: dict[str, set[str]] = {}  # pointer -> the offsets it was loaded at since the last barrier
    for line in prologue:
        _note_load(line, loaded)
    for root in roots:
        _fence(root, loaded)


def _fence(block: Block, loaded: dict[str, set[str]]) -> None:
    items: list[str | Block] = []
    for item in block.items:
        if isinstance(item, Block):
            items.append(item)
            # What a loop loads stays in it: its values leave only through a reduction, which every lane
            # finishes before the next statement (a two-pass norm's second loop is not fenced by its first).
            _fence(item, {pointer: set(offsets) for pointer, offsets in loaded.items()})
            continue
        if item.strip() == BARRIER:
            loaded.clear()
        stored = _access(item, "store")
        if stored is not None and loaded.get(stored[0], set()) - {stored[1]}:
            items.append(BARRIER)
            loaded.clear()
        _note_load(item, loaded)
        items.append(item)
    block.items[:] = items


def _note_load(statement: str, loaded: dict[str, set[str]]) -> None:
    access = _access(statement, "load")
    if access is not None:
        loaded.setdefault(access[0], set()).add(access[1])


def _access(statement: str, call: str) -> tuple[str, str] | None:
    """(pointer, offsets) of the `tl.<call>` in `statement`: the first term of its first argument and the
    rest of that sum as written ("" for a bare pointer); None without such a call."""
    if f"tl.{call}(" not in statement:
        return None
    for node in ast.walk(ast.parse(statement.strip())):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == f"tl.{call}" and node.args:
            first, *rest = _terms(node.args[0])
            return ast.unparse(first), " + ".join(ast.unparse(term) for term in rest)
    return None


def _terms(node: ast.expr) -> list[ast.expr]:
    """The terms of a sum (`p + a + b` -> p, a, b), or the node itself."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [*_terms(node.left), node.right]
    return [node]
