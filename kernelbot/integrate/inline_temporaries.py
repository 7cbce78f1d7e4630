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
lines. Before that, a temporary that only casts another to the dtype that one was already cast to
(`tmp0 = tl.load(...).to(tl.float32)`, then `tmp1 = tmp0.to(tl.float32)`: Inductor upcasts at the load and
again at the op) is dropped and its reads read the first: Triton's cast to a value's own dtype returns the
value itself, so no instruction goes with it. A temporary that only names a parameter of the kernel that
nothing assigns (`tmp17 = variance_epsilon` before the loop that reads it) is dropped and its reads, in a
loop or not, read the parameter: no computation moves.

Triton builds its IR from the expression tree, one op per node in the order Python evaluates them, so the
kernel compiles to what the search timed (tests/kernelbot/integrate/test_inline_temporaries.py compares the
PTX for sm_90).
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import RenamedReads, jit_functions
from evolution.writers.fusion.code_text import inline_single_use

TEMPORARY = re.compile(r"tmp\d+")
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
        kernel = _recasts_dropped(_parameter_aliases_dropped(alone))
        inlined = inline_single_use(cst.Module(body=[kernel]).code, self.line_length, only=TEMPORARY)
        if inlined == original:
            return updated_node
        rewritten = cst.ensure_type(cst.parse_module(inlined).body[0], cst.FunctionDef)
        return rewritten.with_changes(leading_lines=updated_node.leading_lines)


def _parameter_aliases_dropped(kernel: cst.FunctionDef) -> cst.FunctionDef:
    """`kernel` without its temporaries bound once, at its top level, to a parameter nothing assigns, their
    reads reading the parameter. inline_single_use moves nothing into a loop, yet a parameter holds one value
    everywhere in the kernel: reading it where the temporary was read computes nothing anew."""
    bound = _binding_counts(kernel)
    params = {cst.ensure_type(p, cst.Param).name.value for p in m.findall(kernel.params, m.Param())}
    aliases: dict[str, str] = {}  # dropped temporary -> the parameter it named
    kept: list[cst.BaseStatement] = []
    for statement in cst.ensure_type(kernel.body, cst.IndentedBlock).body:
        target, value = _single_assignment(statement)
        if (
            target is not None
            and TEMPORARY.fullmatch(target)
            and bound.get(target) == 1
            and isinstance(value, cst.Name)
            and value.value in params
            and bound.get(value.value) == 1  # the parameter's own binding alone
        ):
            aliases[target] = value.value
            continue
        kept.append(statement)
    if not aliases:
        return kernel
    body = kernel.body.with_changes(body=kept)
    return kernel.with_changes(body=body.visit(RenamedReads(aliases)))


def _recasts_dropped(kernel: cst.FunctionDef) -> cst.FunctionDef:
    """`kernel` without its temporaries that cast a value to the dtype its own binding already cast it to,
    their reads reading that value. Only names bound once, at the kernel's top level, are touched."""
    bound = _binding_counts(kernel)
    casts: dict[str, str] = {}  # name -> the dtype its one binding casts to
    aliases: dict[str, str] = {}  # dropped temporary -> the value it read
    kept: list[cst.BaseStatement] = []
    for statement in cst.ensure_type(kernel.body, cst.IndentedBlock).body:
        target, value = _single_assignment(statement)
        if target is not None and value is not None and bound.get(target) == 1:
            dtype = _cast_dtype(value)
            source = cst.ensure_type(value, cst.Call).func if dtype else None
            read = cst.ensure_type(source, cst.Attribute).value if source is not None else None
            if isinstance(read, cst.Name):
                read_name = aliases.get(read.value, read.value)
                if TEMPORARY.fullmatch(target) and casts.get(read_name) == dtype:
                    aliases[target] = read_name
                    continue
            if dtype:
                casts[target] = dtype
        kept.append(statement)
    if not aliases:
        return kernel
    body = kernel.body.with_changes(body=kept)
    return kernel.with_changes(body=body.visit(RenamedReads(aliases)))


def _binding_counts(kernel: cst.FunctionDef) -> dict[str, int]:
    """How often each name is bound in `kernel` (parameters, assignments, loop targets, anything)."""
    counts: dict[str, int] = {}
    for param in m.findall(kernel.params, m.Param()):
        name = cst.ensure_type(param, cst.Param).name.value
        counts[name] = counts.get(name, 0) + 1
    targets = m.findall(
        kernel.body,
        m.AssignTarget() | m.AugAssign() | m.AnnAssign() | m.For() | m.NamedExpr() | m.CompFor(),
    )
    binders = (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.CompFor)
    for node in targets:
        if not isinstance(node, binders):
            continue
        for bound in m.findall(node.target, m.Name()):
            text = cst.ensure_type(bound, cst.Name).value
            counts[text] = counts.get(text, 0) + 1
    return counts


def _single_assignment(statement: cst.BaseStatement) -> tuple[str | None, cst.BaseExpression | None]:
    """`name` and `value` of a `name = value` line; (None, None) for any other statement."""
    if m.matches(statement, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())])])):
        assign = cst.ensure_type(cst.ensure_type(statement, cst.SimpleStatementLine).body[0], cst.Assign)
        return cst.ensure_type(assign.targets[0].target, cst.Name).value, assign.value
    return None, None


def _cast_dtype(value: cst.BaseExpression) -> str:
    """The dtype (`float32`) `value` casts to where it is `<something>.to(tl.<dtype>)`; "" otherwise."""
    if not m.matches(value, _CAST):
        return ""
    arg = cst.ensure_type(cst.ensure_type(value, cst.Call).args[0].value, cst.Attribute)
    return arg.attr.value
