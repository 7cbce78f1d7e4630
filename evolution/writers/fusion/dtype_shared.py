"""Specialisations that differ only in which 16-bit float their arguments hold (bfloat16 and float16) share
one kernel and one host function.

The writer traces the reference once per argument dtype and writes a kernel per graph. A bfloat16 and a
float16 graph of one op are the same code but for the dtype its rounding steps name (eager PyTorch rounds
each op's result to the input's dtype): `.to(tl.bfloat16).to(tl.float32)` in one, `tl.float16` in the
other. Written with the dtype read from an argument's pointer (`x_ptr.dtype.element_ty`), the two kernels are
one text, which generate's sharing then launches for both; their hosts, allocating in the argument's dtype
(`dtype=x.dtype`), are one function too, named for both (`_silu_and_mul_bf16_fp16`). A float32 graph that is
the same graph but for its dtype runs that kernel as well: its rounding steps round to float32 there, casts
that change nothing, so one kernel serves the three dtypes (and, one host serving them all, the entry
launches it with no dtype test: generate.generate). A float32 graph of another shape (the
reference's own casts to float32, absent from it) keeps its own kernel: two bodies, each named for when it
runs.
"""

from __future__ import annotations

import dataclasses
import re

from evolution.writers.fusion.kernel import KernelCode
from evolution.writers.fusion.model import Graph

_HALF = ("bfloat16", "float16")
_ROUNDING_COMMENT = re.compile(r"^(\s*)# Rounded to (bfloat16|float16) and back, as .*\n", re.M)
_ALLOCATION_DTYPE = re.compile(r"\bdtype=torch\.(\w+)")


def generic_kernels(kernels: list[KernelCode], graphs: list[Graph], line_length: int) -> list[KernelCode]:
    """`kernels` (one per graph) with the 16-bit dtype read from a pointer where that makes two or more of
    them one text (but for their names); the others as they were. A float32 graph that is a 16-bit one but
    for its dtype takes that one's generic kernel (see `_float32_as_half`)."""
    generic = [_generic_text(k, g, line_length) for k, g in zip(kernels, graphs, strict=True)]
    for k, j in _float32_as_half(graphs, generic).items():
        if _launched_alike(kernels[k], kernels[j]):  # the host launches it as it launched its own
            generic[k] = (generic[j] or "").replace(kernels[j].name, kernels[k].name)
    groups: dict[str, list[int]] = {}
    for k, text in enumerate(generic):
        if text is not None:
            groups.setdefault(text.replace(kernels[k].name, "KERNEL"), []).append(k)
    result = list(kernels)
    for members in groups.values():
        apart = {kernels[k].text.replace(kernels[k].name, "KERNEL") for k in members}
        if len(members) > 1 and len(apart) > 1:
            for k in members:
                result[k] = dataclasses.replace(kernels[k], text=generic[k] or kernels[k].text)
    return result


def _float32_as_half(graphs: list[Graph], generic: list[str | None]) -> dict[int, int]:
    """Float32 graph -> a 16-bit graph with a generic kernel that is the same graph but for its dtype: every
    node, argument, shape and output alike once the 16-bit dtype reads float32. That kernel computes the
    float32 graph too: its rounding steps round to the pointer's element type, float32 there, a cast that
    changes nothing and that Triton leaves out (the same instructions as the float32 kernel's own)."""
    found: dict[int, int] = {}
    halves = {j: _as_float32(g) for j, g in enumerate(graphs) if generic[j] is not None}
    for k, graph in enumerate(graphs):
        if generic[k] is None and _holds_only(graph, "float32"):
            key = _dump(graph)
            j = next((j for j, half in halves.items() if half == key), None)
            if j is not None:
                found[k] = j
    return found


def _launched_alike(mine: KernelCode, other: KernelCode) -> bool:
    """Whether two kernels take the same parameters, on the same grid, with the same launch sizes."""
    return (mine.params, mine.grid, mine.tile_elements, mine.persistent, mine.split_block) == (
        other.params,
        other.grid,
        other.tile_elements,
        other.persistent,
        other.split_block,
    )


def _holds_only(graph: Graph, dtype: str) -> bool:
    kinds = [kind for kind in graph.arg_kinds.values() if kind.startswith("tensor:")]
    return bool(kinds) and all(kind == f"tensor:{dtype}" for kind in kinds)


def _as_float32(graph: Graph) -> str | None:
    """The dump of `graph` with its one 16-bit dtype read as float32 (None where it holds none or both)."""
    kinds = {kind.removeprefix("tensor:") for kind in graph.arg_kinds.values() if kind.startswith("tensor:")}
    half = kinds & set(_HALF)
    if len(half) != 1 or kinds - half:
        return None
    return _dump(graph, half.pop())


def _dump(graph: Graph, half: str = "") -> str:
    """What the kernel is written from (nodes, placeholders, outputs, sizes), as text; with `half` read as
    float32 everywhere it is named."""
    parts = (
        graph.placeholders,
        graph.nodes,
        graph.outputs,
        graph.mutations,
        graph.result,
        sorted(graph.symbols.items()),
        graph.guards,
        sorted(graph.arg_kinds.items()),
        graph.dynamic_symbols,
        sorted(graph.size_names.items()),
    )
    text = repr(parts)
    return re.sub(rf"\b{half}\b", "float32", text) if half else text


def _generic_text(kernel: KernelCode, graph: Graph, line_length: int) -> str | None:
    """The kernel's text with its one 16-bit dtype (`tl.bfloat16`) written as the element type of the
    pointer of an argument in that dtype; None where it names no 16-bit dtype, or both, or no argument
    holds it."""
    named = [d for d in _HALF if re.search(rf"\btl\.{d}\b", kernel.text)]
    if len(named) != 1:
        return None
    dtype = named[0]
    pointer = next(
        (
            p
            for p in kernel.params
            if p.kind == "pointer" and graph.arg_kinds.get(p.host) == f"tensor:{dtype}"
        ),
        None,
    )
    if pointer is None:
        return None
    text = re.sub(rf"\btl\.{dtype}\b", f"{pointer.name}.dtype.element_ty", kernel.text)

    def comment(match: re.Match[str]) -> str:
        why = f"{match[1]}# Rounded to {pointer.host}'s dtype and back, as the PyTorch code's op returns it"
        return f"{why}\n" if len(why) <= line_length else ""

    return _ROUNDING_COMMENT.sub(comment, text)


def generic_allocations(lines: list[str], graph: Graph) -> list[str]:
    """Host lines with each allocation in a dtype some tensor argument holds made in that argument's dtype
    (`dtype=torch.bfloat16` -> `dtype=x.dtype`): what lets the hosts of specialisations that share their
    kernel be one function, and those that launch different kernels differ in that alone."""
    holders: dict[str, str] = {}
    for name, kind in graph.arg_kinds.items():
        if kind.startswith("tensor:"):
            holders.setdefault(kind.removeprefix("tensor:"), name)

    def dtype(match: re.Match[str]) -> str:
        holder = holders.get(match[1])
        return f"dtype={holder}.dtype" if holder else match[0]

    return [_ALLOCATION_DTYPE.sub(dtype, line) if "torch.empty" in line else line for line in lines]


def joined_suffix(suffixes: list[str]) -> str:
    """One name for the specialisations `suffixes` name (`_bf16`, `_fp16` -> `_bf16_fp16`)."""
    parts = [part for suffix in suffixes for part in suffix.strip("_").split("_") if part]
    return "_" + "_".join(dict.fromkeys(parts))
