"""Kernels of a flat module that differ only in the width of their program index become one kernel.

The fusion writer's `index32` knob decides whether a kernel's offsets are computed in int32 or int64; the
int64 kernel widens its program's rows where they are bound (`rows = (pid * ROWS + tl.arange(0, ROWS))
.to(tl.int64)`, or `row = tl.program_id(0).to(tl.int64)`) and the rest of the two kernels is the same. A
crossover of the two (int64 wins the small sizes of LMDeploy's RMSNorm on the H200, int32 the large) would
ship one kernel twice. Here it is one kernel with an `INT64_OFFSETS: tl.constexpr` parameter:

    rows = pid * ROWS + tl.arange(0, ROWS)
    if INT64_OFFSETS:
        rows = rows.to(tl.int64)

and each launch passes the width its kernel had (Triton compiles only the branch a launch's constant
selects: every size runs the code it ran before). Source text only, never run.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import code, jit_functions, one_kernel

PARAM = "INT64_OFFSETS"
_WIDENED = m.Call(
    func=m.Attribute(attr=m.Name("to")), args=[m.Arg(m.Attribute(m.Name("tl"), m.Name("int64")))]
)
# `name = <value>.to(tl.int64)`, the form the writer binds a widened index in.
_WIDENED_BINDING = m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())], value=_WIDENED)])


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
        if len(group) != 2:
            continue
        # The int64 kernel widens what the int32 one binds narrow, and nothing the other does not widen (a
        # value both cast to int64, an expert id, is no offset).
        first, second = (_widened(jit[k]) for k in group)
        if first < second:
            narrow, wide = group
        elif second < first:
            wide, narrow = group
        else:
            continue
        indices = _widened(jit[wide]) - _widened(jit[narrow])
        module, _ = one_kernel(module, {narrow: "False", wide: "True"}, PARAM, _Widen(indices).body)
    return module.code if module.code != source else source


def _widened(kernel: cst.FunctionDef) -> set[str]:
    """The names a kernel binds to a value widened to int64."""
    lines = [cst.ensure_type(b, cst.SimpleStatementLine) for b in m.findall(kernel, _WIDENED_BINDING)]
    return {
        cst.ensure_type(cst.ensure_type(line.body[0], cst.Assign).targets[0].target, cst.Name).value
        for line in lines
    }


def _narrowed(kernel: cst.FunctionDef) -> str:
    """The kernel's parameters and body with every value bound widened written narrow."""
    stripped = kernel.with_changes(name=cst.Name("_kernel"), decorators=[], leading_lines=[])
    return code(cst.ensure_type(stripped.visit(_Narrow()), cst.FunctionDef))


class _Narrow(cst.CSTTransformer):
    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if m.matches(updated_node.value, _WIDENED) and m.matches(updated_node.targets[0].target, m.Name()):
            value = cst.ensure_type(cst.ensure_type(updated_node.value, cst.Call).func, cst.Attribute).value
            return updated_node.with_changes(value=value.with_changes(lpar=[], rpar=[]))
        return updated_node


class _Widen(cst.CSTTransformer):
    """After the binding of each of `indices`: `if INT64_OFFSETS: index = index.to(tl.int64)`."""

    def __init__(self, indices: set[str]) -> None:
        self.indices = indices

    def body(self, kernel: cst.FunctionDef) -> cst.IndentedBlock:
        """The kernel's body with its indices widened under the flag."""
        self._pending = set(self.indices)  # each index is widened after its first binding only
        return cst.ensure_type(kernel.body.visit(self), cst.IndentedBlock)

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body: list[cst.BaseStatement] = []
        for statement in updated_node.body:
            body.append(statement)
            bound = _bound_name(statement)
            if bound in self._pending:
                self._pending.discard(bound)
                body.append(cst.parse_statement(f"if {PARAM}:\n    {bound} = {bound}.to(tl.int64)\n"))
        return updated_node.with_changes(body=body)


def _bound_name(statement: cst.BaseStatement) -> str | None:
    """The name a `name = value` statement binds; None for any other statement."""
    if m.matches(statement, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())])])):
        assign = cst.ensure_type(cst.ensure_type(statement, cst.SimpleStatementLine).body[0], cst.Assign)
        return cst.ensure_type(assign.targets[0].target, cst.Name).value
    return None
