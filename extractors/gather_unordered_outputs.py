"""Gatherer: outputs whose rows come in no fixed order. `torch.topk(..., sorted=False)` (and a sort that does
not fix ties: `sort`/`argsort` without `stable=True`) leaves the order of each row to the implementation;
when its indices reach a returned value, that value is a `[[compare.unordered]]` key, and the returned values
computed from the selected values (`topk` values, `gather(dim, ids)`, elementwise ops on them) follow it.

Order-free consumers (`scatter`, reductions such as `sum`) end the trail: `zeros.scatter_(-1, idx, vals)`
puts every element back in its place. `sorted=` given as an expression is evaluated with the parameters'
known values (defaults, the spec's plain values); one that cannot be evaluated counts as unsorted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from extractors.drafting.local_values import arg_value, dotted, names_in

_ORDER_FREE = {
    "sum",
    "mean",
    "prod",
    "amax",
    "amin",
    "max",
    "min",
    "norm",
    "any",
    "all",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "scatter_reduce",
    "scatter_reduce_",
    "index_put",
    "index_put_",
    "bincount",
    "count_nonzero",
}
KEY, VALUES = "key", "values"


@dataclass
class UnorderedRule:
    key: str  # "return[1]"
    values: list[str] = field(default_factory=list)
    why: str = ""


class GatherUnorderedOutputs(cst.CSTVisitor):
    """Which names of one function hold unordered indices (KEY) or the values that follow them (VALUES)."""

    def __init__(self, known: Mapping[str, Any]) -> None:
        super().__init__()
        self.known = dict(known)
        self.roles: dict[str, str] = {}
        self.why: dict[str, str] = {}
        self.returns: list[cst.BaseExpression] = []

    def leave_Assign(self, original_node: cst.Assign) -> None:
        value = original_node.value
        for target in original_node.targets:
            self._bind(target.target, value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        source = self._selection(value)
        if isinstance(target, (cst.Tuple, cst.List)) and source is not None:
            for element, role in zip(target.elements, (VALUES, KEY), strict=False):
                if isinstance(element.value, cst.Name):
                    self.roles[element.value.value] = role
                    self.why[element.value.value] = source
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements):
                for element, item in zip(target.elements, value.elements, strict=True):
                    self._bind(element.value, item.value)
            else:
                for element in target.elements:
                    self._forget(element.value)
            return
        if not isinstance(target, cst.Name):
            return
        role, why = self._role(value)
        if role is None:
            self._forget(target)
        else:
            self.roles[target.value], self.why[target.value] = role, why

    def _forget(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.roles.pop(target.value, None)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.returns.append(node.value)

    # -- roles of expressions ------------------------------------------------------------------------------
    def _selection(self, value: cst.BaseExpression) -> str | None:
        """`torch.topk(..., sorted=False)` / `x.sort()` -> why its rows are unordered; None when they are
        not."""
        if not isinstance(value, cst.Call):
            return None
        name = dotted(value.func) if not isinstance(value.func, cst.Attribute) else value.func.attr.value
        method = name.rsplit(".", 1)[-1]
        if method == "topk":
            flag = arg_value(value, 99, "sorted")
            if flag is None or self._evaluates_true(flag):
                return None
            return "topk(sorted=False)"
        if method in ("sort", "argsort"):
            stable = arg_value(value, 99, "stable")
            if stable is not None and self._evaluates_true(stable):
                return None
            return f"{method}() without stable=True"
        return None

    def _evaluates_true(self, expr: cst.BaseExpression) -> bool:
        code = cst.Module([]).code_for_node(expr)
        try:
            return bool(eval(code, {"__builtins__": {}}, dict(self.known)))
        except Exception:  # it depends on something not known here: count it as unsorted
            return False

    def _role(self, value: cst.BaseExpression) -> tuple[str | None, str]:
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Call):
            why = self._selection(value.value)
            index = value.slice[0].slice if len(value.slice) == 1 else None
            if why is not None and isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                return (KEY if index.value.value == "1" else VALUES), why
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Call):
            why = self._selection(value.value)
            if why is not None and value.attr.value in ("indices", "values"):
                return (KEY if value.attr.value == "indices" else VALUES), why
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            method = value.func.attr.value
            if method in _ORDER_FREE:
                return None, ""
            if method in ("gather", "take_along_dim"):
                index = arg_value(
                    value, 1 if method == "gather" else 0, "index" if method == "gather" else "indices"
                )
                role = self._name_role(index)
                if role == KEY:
                    return VALUES, self.why[_name(index)]
        roles = [(n, self.roles[n]) for n in names_in(value) if n in self.roles]
        if not roles:
            return None, ""
        chosen = next((r for r in roles if r[1] == KEY), roles[0])
        return chosen[1], self.why[chosen[0]]

    def _name_role(self, expr: cst.BaseExpression | None) -> str | None:
        return self.roles.get(_name(expr)) if expr is not None else None


def _name(expr: cst.BaseExpression | None) -> str:
    return expr.value if isinstance(expr, cst.Name) else ""


def unordered_outputs(source: str, entry: str, known: Mapping[str, Any] | None = None) -> list[UnorderedRule]:
    """`[[compare.unordered]]` rules for `entry`'s returned values (empty when every row has one order)."""
    module = cst.parse_module(source)
    function = next(
        (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == entry), None
    )
    if function is None:
        return []
    gatherer = GatherUnorderedOutputs(known or {})
    function.body.visit(gatherer)
    rules: list[UnorderedRule] = []
    for value in gatherer.returns:
        elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        paths = (
            ["return"] if not isinstance(value, cst.Tuple) else [f"return[{i}]" for i in range(len(elements))]
        )
        roles = {p: gatherer._role(e) for p, e in zip(paths, elements, strict=True)}
        for path, (role, why) in roles.items():
            if role != KEY or any(r.key == path for r in rules):
                continue
            followers = [p for p, (r, w) in roles.items() if r == VALUES and w == why]
            rules.append(UnorderedRule(path, followers, why))
    return rules
