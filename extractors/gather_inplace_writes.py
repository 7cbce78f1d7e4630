"""Gatherer: which parameters a function may write in place, found statically on the emitted reference.

Writes: `x.copy_(...)` and every other `*_` tensor method (add_, index_copy_, scatter_...), `out=x`, subscript
and attribute assignment (`x[i] = v`, `x[:n] += v`), augmented assignment of a name that aliases a
parameter (`x += 1` is in place for tensors), `torch.<op>_(x, ...)`, and passing a parameter to a function of
the same file that writes that argument. Views (slices, `.view`, `.narrow`, `chunk`...) alias their source,
so `page_table[:, :n].copy_(...)` writes `page_table`. The analysis over-approximates (advanced indexing
copies, but is treated as a view); running the reference confirms which writes really happen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

_VIEW_METHODS = {
    "view",
    "view_as",
    "reshape",
    "flatten",
    "unflatten",
    "narrow",
    "select",
    "squeeze",
    "unsqueeze",
    "transpose",
    "permute",
    "t",
    "expand",
    "expand_as",
    "as_strided",
    "diagonal",
    "unfold",
    "split",
    "chunk",
    "unbind",
    "tensor_split",
    "detach",
    "movedim",
    "swapaxes",
    "contiguous",
    "data",
}
_NOT_WRITES = {"requires_grad_", "retain_grad_", "share_memory_", "record_stream_"}
_MODULE_ROOTS = {"torch", "F", "np", "numpy"}


@dataclass
class InplaceFinding:
    param: str
    how: str  # e.g. "copy_ at line 12"


@dataclass
class FunctionSummary:
    params: list[str]
    writes: dict[str, list[str]] = field(default_factory=dict)  # param -> how


class GatherInplaceWrites(cst.CSTVisitor):
    """Summarise one function, given summaries of the other functions of the file."""

    def __init__(
        self,
        function: cst.FunctionDef,
        summaries: dict[str, FunctionSummary],
        positions: Mapping[cst.CSTNode, CodeRange],
    ) -> None:
        super().__init__()
        self.positions = positions
        p = function.params
        self.params = [x.name.value for x in [*p.posonly_params, *p.params, *p.kwonly_params]]
        for star in (p.star_arg, p.star_kwarg):
            if isinstance(star, cst.Param):
                self.params.append(star.name.value)
        self.aliases: dict[str, set[str]] = {name: {name} for name in self.params}
        self.summaries = summaries
        self.summary = FunctionSummary(list(self.params))
        self.function = function

    # -- aliasing ------------------------------------------------------------------------------------------
    def _roots(self, expr: cst.BaseExpression) -> set[str]:
        """Parameters that `expr` may be a view of."""
        while True:
            if isinstance(expr, cst.Name):
                return set(self.aliases.get(expr.value, set()))
            if isinstance(expr, (cst.Subscript, cst.Attribute)):
                expr = expr.value
            elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
                if expr.func.attr.value not in _VIEW_METHODS:
                    return set()
                expr = expr.func.value
            else:
                return set()

    def visit_Assign(self, node: cst.Assign) -> None:
        roots = self._roots(node.value)
        for target in node.targets:
            self._bind(target.target, roots)
            self._write_target(target.target, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, self._roots(node.value))
            self._write_target(node.target, node)

    def _bind(self, target: cst.BaseExpression, roots: set[str]) -> None:
        if isinstance(target, cst.Name):
            self.aliases[target.value] = roots  # rebinding drops the old aliases
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, roots)

    def _write_target(self, target: cst.BaseExpression, node: cst.CSTNode) -> None:
        if isinstance(target, (cst.Subscript, cst.Attribute)):
            kind = "subscript assignment" if isinstance(target, cst.Subscript) else "attribute assignment"
            self._record(self._roots(target), kind, node)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._write_target(element.value, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        op = cst.Module([]).code_for_node(node.operator).strip()
        self._record(self._roots(node.target), f"augmented assignment {op}", node)

    # -- calls ---------------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "out":
                self._record(self._roots(arg.value), "out=", node)
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method.endswith("_") and not method.endswith("__") and method not in _NOT_WRITES:
                owner = func.value
                if (isinstance(owner, cst.Name) and owner.value in _MODULE_ROOTS) or (
                    isinstance(owner, cst.Attribute)
                    and cst.Module([]).code_for_node(owner).startswith("torch.")
                ):
                    if node.args:
                        self._record(self._roots(node.args[0].value), f"{method}", node)
                else:
                    self._record(self._roots(owner), method, node)
        elif isinstance(func, cst.Name) and func.value in self.summaries:
            callee = self.summaries[func.value]
            for position, arg in enumerate(node.args):
                if arg.star:
                    continue
                name = (
                    arg.keyword.value
                    if arg.keyword is not None
                    else (callee.params[position] if position < len(callee.params) else None)
                )
                if name is not None and name in callee.writes:
                    self._record(self._roots(arg.value), f"{func.value}() writes its {name}", node)

    def _record(self, roots: set[str], how: str, node: cst.CSTNode) -> None:
        line = self._line(node)
        for root in roots:
            entry = self.summary.writes.setdefault(root, [])
            text = f"{how} (line {line})" if line else how
            if text not in entry:
                entry.append(text)

    def _line(self, node: cst.CSTNode) -> int:
        position = self.positions.get(node)
        return position.start.line if position is not None else 0


def inplace_writes(source: str, entry: str) -> dict[str, list[str]]:
    """Parameters of `entry` (in the given module source) that may be written in place, with evidence."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    functions = [s for s in wrapper.module.body if isinstance(s, cst.FunctionDef)]
    summaries: dict[str, FunctionSummary] = {}
    for _ in range(4):  # helpers writing their arguments propagate to callers; a few rounds reach a fixpoint
        changed = False
        for function in functions:
            gatherer = GatherInplaceWrites(function, summaries, positions)
            function.body.visit(gatherer)
            old = summaries.get(function.name.value)
            summaries[function.name.value] = gatherer.summary
            changed |= old is None or old.writes.keys() != gatherer.summary.writes.keys()
        if not changed:
            break
    summary = summaries.get(entry)
    return dict(summary.writes) if summary else {}
