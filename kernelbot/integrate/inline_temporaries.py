"""Transformer: Inductor's numbered temporaries read once are written into the expression that reads them.

Inductor writes one line per op (`tmp2 = -tmp1`, `tmp3 = tl.exp(tmp2)`, `tmp5 = tmp3 + tmp4`,
`tmp6 = tmp1 / tmp5`), and a kernel seeded from torch.compile's code keeps them: in the module of a
SiLU-and-mul crossover, Inductor's kernel spent eight lines on SiLU and the product where an engine's
kernel writes one. A reviewer reads `tmp1 / (tl.exp(-tmp1) + tmp4)` as SiLU; a chain of six numbered
values they must follow by hand. So each `tmp<N>` of a @triton.jit function that is read once, by a
statement at the same indentation further down, is inlined there by the rules the fusion writer lays out
its own kernels with (evolution.writers.fusion.code_text.inline_single_use: loads, stores, aranges and
constants stay on their lines; nothing is moved into a loop or past a statement that assigns a name it
reads; the line stays within the engine's limit). A value read twice and every other name keep their
lines. Before that, the lines that only copy a value under another name go, in any block, loop bodies
included, their reads reading the value: a temporary that casts a value again to the dtype its own line
cast it to (`tmp0 = tl.load(...).to(tl.float32)`, then `tmp1 = tmp0.to(tl.float32)`: Inductor upcasts at
the load and again at the op; Triton's cast to a value's own dtype returns the value itself, so no
instruction goes with it), a temporary that names a parameter or another value (`tmp17 = variance_epsilon`
before the loop that reads it), and an index Inductor only renames (`x0 = xindex`, `r0_1 = r0_index` in
each loop of a looped reduction). Each such name is bound only by copies of one value, read only below
them in their blocks, and the value is not assigned again below them: no computation moves.
A temporary a named value only copies (`residual_out = tmp13`) takes that name where it is computed.

Triton builds its IR from the expression tree, one op per node in the order Python evaluates them, so the
kernel compiles to what the search timed (tests/kernelbot/integrate/test_inline_temporaries.py compares the
PTX for sm_90).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import RenamedReads, jit_functions
from evolution.writers.fusion.code_text import inline_single_use
from kernelbot.integrate.count_names import binding_counts, read_counts

TEMPORARY = re.compile(r"tmp\d+")
# Inductor's names for an index, or a part of one, along a dimension (`x0`, `y1`, `r0_1`).
INDEX = re.compile(r"[xyz]\d+|r\d+_\d+")
# `<value>.to(tl.<dtype>)`, nothing else passed: a cast whose result has that dtype whatever it casts.
_CAST = m.Call(
    func=m.Attribute(attr=m.Name("to")), args=[m.Arg(m.Attribute(m.Name("tl"), m.Name()), keyword=None)]
)


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
        alone = updated_node.with_changes(leading_lines=())
        original = cst.Module(body=[alone]).code
        if not TEMPORARY.search(original):
            return updated_node
        kernel = _copies_dropped(alone)
        kernel = _temporaries_named_by_copies(kernel)
        inlined = inline_single_use(cst.Module(body=[kernel]).code, self.line_length, only=TEMPORARY)
        if inlined == original:
            return updated_node
        rewritten = cst.ensure_type(cst.parse_module(inlined).body[0], cst.FunctionDef)
        return rewritten.with_changes(leading_lines=updated_node.leading_lines)


def _copies_dropped(kernel: cst.FunctionDef) -> cst.FunctionDef:
    """`kernel` without the lines that copy a value under another name in any of its blocks, loop bodies
    included, their reads reading the value (module docstring): an index Inductor renames
    (`r0_1 = r0_index`), a temporary that names a value (`tmp17 = variance_epsilon`), and a temporary that
    casts a value bound earlier in its block to the dtype that
    value was cast to (`tmp1 = tmp0.to(tl.float32)` in a loop)."""
    bound = binding_counts(kernel)
    reads = read_counts(kernel)
    copies: dict[str, list[tuple[int, str, int, int]]] = {}  # name -> (line id, value, reads, rebinds) each
    for suite in m.findall(kernel, m.IndentedBlock()):
        body = cst.ensure_type(suite, cst.IndentedBlock).body
        for k, statement in enumerate(body):
            target, value = _single_assignment(statement)
            if target is None or value is None:
                continue
            copied = _copied(target, value, body[:k], bound)
            if copied is not None:
                below = cst.IndentedBlock(body=body[k + 1 :])
                rebinds = binding_counts(below).get(copied, 0)
                copies.setdefault(target, []).append(
                    (id(statement), copied, read_counts(below).get(target, 0), rebinds)
                )
    renames: dict[str, str] = {}
    dropped: set[int] = set()
    for target, lines in copies.items():
        values = {value for _, value, _, _ in lines}
        if (
            len(lines) == bound.get(target)  # every line binding it is a copy ...
            and len(values) == 1  # ... of one value
            and sum(n for _, _, n, _ in lines) == reads.get(target, 0)  # read only below its copies
            and not any(rebinds for *_, rebinds in lines)  # the value not bound again below them
        ):
            renames[target] = values.pop()
            dropped |= {line for line, *_ in lines}
    if not renames:
        return kernel
    for target, copied in list(renames.items()):
        while copied in renames:  # a copy of a copy reads the first value
            copied = renames[copied]
        renames[target] = copied
    without = cst.ensure_type(kernel.visit(_DropLines(dropped)), cst.FunctionDef)
    return cst.ensure_type(without.visit(RenamedReads(renames)), cst.FunctionDef)


def _temporaries_named_by_copies(kernel: cst.FunctionDef) -> cst.FunctionDef:
    """`kernel` with a temporary that a named value only copies (`residual_out = tmp13`, once its cast to
    its own dtype is gone) bound under that name where it is computed, the copy's line dropped: both
    bound once, in one block, the temporary above the copy, the name read only below the copy."""
    bound = binding_counts(kernel)
    reads = read_counts(kernel)
    renames: dict[str, str] = {}
    dropped: set[int] = set()
    for suite in m.findall(kernel, m.IndentedBlock()):
        body = cst.ensure_type(suite, cst.IndentedBlock).body
        for k, statement in enumerate(body):
            target, value = _single_assignment(statement)
            computed = {_single_assignment(above)[0] for above in body[:k]}
            if (
                target is not None
                and isinstance(value, cst.Name)
                and TEMPORARY.fullmatch(value.value)
                and not (TEMPORARY.fullmatch(target) or INDEX.fullmatch(target))
                and value.value in computed
                and bound.get(target) == bound.get(value.value) == 1
                and value.value not in renames
                and read_counts(cst.IndentedBlock(body=body[k + 1 :])).get(target, 0) == reads.get(target, 0)
            ):
                renames[value.value] = target
                dropped.add(id(statement))
    if not renames:
        return kernel
    without = cst.ensure_type(kernel.visit(_DropLines(dropped)), cst.FunctionDef)
    return cst.ensure_type(without.visit(RenamedReads(renames)), cst.FunctionDef)


def _copied(
    target: str, value: cst.BaseExpression, above: Sequence[cst.BaseStatement], bound: dict[str, int]
) -> str | None:
    """The name `target = value` copies: a name an index or a temporary renames, or a value bound last in
    the lines `above` (of the same block) by a cast to the dtype `value` casts it to again; None for any
    other line."""
    if (INDEX.fullmatch(target) or TEMPORARY.fullmatch(target)) and isinstance(value, cst.Name):
        # an index renamed, or a temporary left copying a value once its cast to the value's own dtype
        # went (kernelbot.integrate.drop_noop_casts: `tmp1 = tmp0`)
        return value.value if value.value != target else None
    dtype = cast_dtype(value)
    if not (dtype and TEMPORARY.fullmatch(target) and bound.get(target) == 1):
        return None
    read = cst.ensure_type(cst.ensure_type(value, cst.Call).func, cst.Attribute).value
    if not isinstance(read, cst.Name):
        return None
    # The value's latest binding above in the block must be the cast (a load named for its pointer in each
    # of two loops is bound twice in the kernel, once in each block); a binding inside a compound
    # statement above is one this block cannot see into.
    for statement in reversed(above):
        if binding_counts(statement).get(read.value):
            name, earlier = _single_assignment(statement)
            if name == read.value and earlier is not None and cast_dtype(earlier) == dtype:
                return name
            return None
    return None


class _DropLines(cst.CSTTransformer):
    """Removes the statements whose original node's id is in `lines` from the blocks that hold them."""

    def __init__(self, lines: set[int]) -> None:
        super().__init__()
        self.lines = lines

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        kept = [
            new
            for old, new in zip(original_node.body, updated_node.body, strict=True)
            if id(old) not in self.lines
        ]
        return updated_node.with_changes(body=kept) if len(kept) < len(updated_node.body) else updated_node


def _single_assignment(statement: cst.BaseStatement) -> tuple[str | None, cst.BaseExpression | None]:
    """`name` and `value` of a `name = value` line; (None, None) for any other statement."""
    if m.matches(statement, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())])])):
        assign = cst.ensure_type(cst.ensure_type(statement, cst.SimpleStatementLine).body[0], cst.Assign)
        return cst.ensure_type(assign.targets[0].target, cst.Name).value, assign.value
    return None, None


def cast_dtype(value: cst.BaseExpression) -> str:
    """The dtype (`float32`) `value` casts to where it is `<something>.to(tl.<dtype>)`; "" otherwise."""
    if not m.matches(value, _CAST):
        return ""
    arg = cst.ensure_type(cst.ensure_type(value, cst.Call).args[0].value, cst.Attribute)
    return arg.attr.value
