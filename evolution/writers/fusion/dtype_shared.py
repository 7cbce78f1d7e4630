"""Specialisations that differ only in which 16-bit float their arguments hold (bfloat16 and float16) share
one kernel and one host function.

The writer traces the reference once per argument dtype and writes a kernel per graph. A bfloat16 and a
float16 graph of one op are the same code but for the dtype its rounding steps name (eager PyTorch rounds
each op's result to the input's dtype): `.to(tl.bfloat16).to(tl.float32)` in one, `tl.float16` in the
other. Written with the dtype read from an argument's pointer (`x_ptr.dtype.element_ty`), the two kernels are
one text, which generate's sharing then launches for both; their hosts, allocating in the argument's dtype
(`dtype=x.dtype`), are one function too, named for both (`_silu_and_mul_bf16_fp16`). A float32 graph, which
has no rounding steps, keeps its own kernel: two bodies, each named for when it runs.
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
    them one text (but for their names); the others as they were."""
    generic = [_generic_text(k, g, line_length) for k, g in zip(kernels, graphs, strict=True)]
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
