"""Kernels of a flat module that differ only in the width of their program index become one kernel.

The fusion writer's `index32` knob decides whether a kernel's offsets are computed in int32 or int64; where
the program id is read only for offsets, the int64 kernel widens it where it is bound
(`row = tl.program_id(0).to(tl.int64)`) and the rest of the two kernels is the same. A crossover of the two
(int64 wins the small sizes of LMDeploy's RMSNorm on the H200, int32 the large) would ship one kernel twice.
Here it is one kernel with an `INT64_OFFSETS: tl.constexpr` parameter:

    row = tl.program_id(0)
    if INT64_OFFSETS:
        row = row.to(tl.int64)

and each launch passes the width its kernel had (Triton compiles only the branch a launch's constant
selects: every size runs the code it ran before). Source text only, never run.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import code, jit_functions, one_kernel

PARAM = "INT64_OFFSETS"
_PROGRAM_ID = m.Call(func=m.Attribute(m.Name("tl"), m.Name("program_id")))
_WIDENED = m.Call(
    func=m.Attribute(value=_PROGRAM_ID, attr=m.Name("to")),
    args=[m.Arg(m.Attribute(m.Name("tl"), m.Name("int64")))],
)
# `name = tl.program_id(N).to(tl.int64)`, the form the writer binds a widened index in; and its narrow form.
_WIDENED_BINDING = m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())], value=_WIDENED)])
_NARROW_BINDING = m.SimpleStatementLine(
    body=[m.Assign(targets=[m.AssignTarget(m.Name())], value=_PROGRAM_ID)]
)


def index_widths_merged(source: str) -> str:
    """`source` (a flat module's text) with each pair of kernels alike but for a widened program index
    merged into one; `source` itself when there is none."""
    module = cst.parse_module(source)
    jit = jit_functions(module)
    alike: dict[str, list[str]] = {}
    for name, kernel in jit.items():
        if kernel.params.params:
            alike.setdefault(_narrowed(kernel), []).append(name)
    for group in alike.values():
        indices = {k: _widened(jit[k]) for k in group}
        wide = [k for k in group if indices[k]]
        narrow = [k for k in group if not m.findall(jit[k], _WIDENED)]
        if len(group) == 2 and len(wide) == 1 and len(narrow) == 1:
            module, _ = one_kernel(
                module, {narrow[0]: "False", wide[0]: "True"}, PARAM, _Widen(indices[wide[0]]).body
            )
    return module.code if module.code != source else source


def _widened(kernel: cst.FunctionDef) -> set[str]:
    """The names a kernel binds to a widened program id; empty when it widens one in another form too."""
    bindings = m.findall(kernel, _WIDENED_BINDING)
    if len(bindings) != len(m.findall(kernel, _WIDENED)):
        return set()
    lines = [cst.ensure_type(b, cst.SimpleStatementLine) for b in bindings]
    return {
        cst.ensure_type(cst.ensure_type(line.body[0], cst.Assign).targets[0].target, cst.Name).value
        for line in lines
    }


def _narrowed(kernel: cst.FunctionDef) -> str:
    """The kernel's parameters and body with every widened program id written narrow."""
    stripped = kernel.with_changes(name=cst.Name("_kernel"), decorators=[], leading_lines=[])
    return code(cst.ensure_type(stripped.visit(_Narrow()), cst.FunctionDef))


class _Narrow(cst.CSTTransformer):
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if m.matches(updated_node, _WIDENED):
            return cst.ensure_type(updated_node.func, cst.Attribute).value
        return updated_node


class _Widen(cst.CSTTransformer):
    """After each `index = tl.program_id(N)` of `indices`: `if INT64_OFFSETS: index = index.to(tl.int64)`."""

    def __init__(self, indices: set[str]) -> None:
        self.indices = indices

    def body(self, kernel: cst.FunctionDef) -> cst.IndentedBlock:
        """The kernel's body with its indices widened under the flag."""
        return cst.ensure_type(kernel.body.visit(self), cst.IndentedBlock)

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body: list[cst.BaseStatement] = []
        for statement in updated_node.body:
            body.append(statement)
            if m.matches(statement, _NARROW_BINDING):
                assign = cst.ensure_type(
                    cst.ensure_type(statement, cst.SimpleStatementLine).body[0], cst.Assign
                )
                index = cst.ensure_type(assign.targets[0].target, cst.Name).value
                if index in self.indices:
                    body.append(cst.parse_statement(f"if {PARAM}:\n    {index} = {index}.to(tl.int64)\n"))
        return updated_node.with_changes(body=body)
