"""Transformer: Inductor's numbered temporaries read once are written into the expression that reads them.

Inductor writes one line per op (`tmp2 = -tmp1`, `tmp3 = tl.exp(tmp2)`, `tmp5 = tmp3 + tmp4`,
`tmp6 = tmp1 / tmp5`), and a kernel seeded from torch.compile's code keeps them: in the module of a
SiLU-and-mul crossover, Inductor's kernel spent eight lines on SiLU and the product where an engine's
kernel writes one. A reviewer reads `tmp1 / (tl.exp(-tmp1) + tmp4)` as SiLU; a chain of six numbered
values they must follow by hand. So each `tmp<N>` of a @triton.jit function that is read once, by a
statement at the same indentation further down, is inlined there by the rules the fusion writer lays out
its own kernels with (evolution.writers.fusion.code_text.inline_single_use: loads, stores, aranges and
constants stay on their lines; nothing is moved into a loop or past a statement that assigns a name it
reads; the line stays within the engine's limit). A value read twice (`tmp1`, SiLU's input) and every
other name keep their lines.

Triton builds its IR from the expression tree, one op per node in the order Python evaluates them, so the
kernel compiles to what the search timed (tests/kernelbot/integrate/test_inline_temporaries.py compares the
PTX for sm_90).
"""

from __future__ import annotations

import re

import libcst as cst

from evolution.mutators.crossover.alike import jit_functions
from evolution.writers.fusion.code_text import inline_single_use

TEMPORARY = re.compile(r"tmp\d+")


def inlined_temporaries(module: cst.Module, line_length: int) -> cst.Module:
    """`module` with each @triton.jit function's single-use `tmp<N>` values inlined (module docstring)."""
    kernels = set(jit_functions(module))
    if not kernels:
        return module
    return module.visit(_InlineTemporariesTransformer(kernels, line_length))


class _InlineTemporariesTransformer(cst.CSTTransformer):
    def __init__(self, kernels: set[str], line_length: int) -> None:
        super().__init__()
        self.kernels = kernels
        self.line_length = line_length

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if updated_node.name.value not in self.kernels:
            return updated_node
        # The function alone, without the comments above it (they stay with the original's leading lines).
        code = cst.Module(body=[updated_node.with_changes(leading_lines=())]).code
        if not TEMPORARY.search(code):
            return updated_node
        inlined = inline_single_use(code, self.line_length, only=TEMPORARY)
        if inlined == code:
            return updated_node
        rewritten = cst.ensure_type(cst.parse_module(inlined).body[0], cst.FunctionDef)
        return rewritten.with_changes(leading_lines=updated_node.leading_lines)
