"""Gatherer: outputs whose rows come in no fixed order. `torch.topk(..., sorted=False)` leaves the order of
each row to the implementation; when its indices reach a returned value, that value is a
`[[compare.unordered]]` key, and the returned values computed from the selected values (`topk` values,
`gather(dim, ids)`, elementwise ops on them) follow it. A sort is not unordered (its rows are ordered by
value; only ties are open, which `gather_tied_outputs` declares), nor is a sorted top-k.

Order-free consumers (`scatter`, reductions such as `sum`) end the trail: `zeros.scatter_(-1, idx, vals)`
puts every element back in its place. `sorted=` given as an expression is evaluated with the parameters'
known values (defaults, the spec's plain values); one that cannot be evaluated counts as unsorted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from extractors.drafting.local_values import arg_value, dotted

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

    GATHERED = VALUES  # the role of `x.gather(dim, ids)`: it follows the ids

    def __init__(self, known: Mapping[str, Any]) -> None:
        super().__init__()
        self.known = dict(known)
        self.roles: dict[str, str] = {}
        self.why: dict[str, str] = {}
        self.results: dict[str, str] = {}  # names bound to a selection's (values, indices) result -> why
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
        result = self._selection(value)
        if result is not None:
            self.results[target.value] = result

    def _forget(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.roles.pop(target.value, None)
            self.results.pop(target.value, None)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.returns.append(node.value)

    # -- roles of expressions ------------------------------------------------------------------------------
    def _selection(self, value: cst.BaseExpression) -> str | None:
        """`torch.topk(..., sorted=False)` -> why its rows are unordered; None when they are not."""
        if not isinstance(value, cst.Call):
            return None
        name = dotted(value.func) if not isinstance(value.func, cst.Attribute) else value.func.attr.value
        method = name.rsplit(".", 1)[-1]
        if method == "topk":
            flag = arg_value(value, 99, "sorted")
            if flag is None or self._evaluates_true(flag):
                return None
            return "topk(sorted=False)"
        return None

    def _evaluates_true(self, expr: cst.BaseExpression) -> bool:
        code = cst.Module([]).code_for_node(expr)
        try:
            return bool(eval(code, {"__builtins__": {}}, dict(self.known)))
        except Exception:  # it depends on something not known here: count it as unsorted
            return False

    def _result_of(self, value: cst.BaseExpression) -> str | None:
        """`torch.topk(...)` itself, or a name bound to it -> why its rows are unordered; else None."""
        if isinstance(value, cst.Name):
            return self.results.get(value.value)
        return self._selection(value)

    def _role(self, value: cst.BaseExpression) -> tuple[str | None, str]:
        """(role, why) of an expression: a selection's parts, a gather by its ids, or what its parts hold."""
        known = self._pattern_role(value)
        if known is not None:
            return known
        if isinstance(value, cst.Name):
            name = value.value
            return (self.roles[name], self.why[name]) if name in self.roles else (None, "")
        parts = [value.value] if isinstance(value, cst.Attribute) else list(_subexpressions(value))
        found = [r for r in (self._role(p) for p in parts) if r[0] is not None]
        if not found:
            return None, ""
        return next((r for r in found if r[0] == KEY), None) or self._mixed(found)

    def _pattern_role(self, value: cst.BaseExpression) -> tuple[str | None, str] | None:
        if isinstance(value, cst.Subscript) and isinstance(value.value, (cst.Call, cst.Name)):
            why = self._result_of(value.value)
            index = value.slice[0].slice if len(value.slice) == 1 else None
            if why is not None and isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                return (KEY if index.value.value == "1" else VALUES), why
        if isinstance(value, cst.Attribute) and isinstance(value.value, (cst.Call, cst.Name)):
            why = self._result_of(value.value)
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
                role, why = self._role(index) if index is not None else (None, "")
                if role == KEY:
                    return self.GATHERED, why
        if isinstance(value, cst.Call) and (why := self._selection(value)) is not None:
            method = value.func.attr.value if isinstance(value.func, cst.Attribute) else dotted(value.func)
            if method.rsplit(".", 1)[-1] == "argsort":
                return KEY, why
        return None

    def _mixed(self, found: list[tuple[str | None, str]]) -> tuple[str | None, str]:
        """The role of an expression over several followers (no key among them)."""
        return found[0]


def _subexpressions(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The expressions directly inside `node` (an argument's value, not its keyword)."""
    found: list[cst.BaseExpression] = []
    for child in node.children:
        if isinstance(child, cst.Arg):
            found.append(child.value)
        elif isinstance(child, cst.BaseExpression):
            found.append(child)
        else:
            found.extend(_subexpressions(child))
    return found


def entry_returns(
    source: str, entry: str, gatherer: GatherUnorderedOutputs
) -> list[dict[str, tuple[str | None, str]]]:
    """Visit `entry` with `gatherer`; per return statement, each returned path's (role, why)."""
    module = cst.parse_module(source)
    function = next(
        (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == entry), None
    )
    if function is None:
        return []
    function.body.visit(gatherer)
    found = []
    for value in gatherer.returns:
        elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        paths = (
            ["return"] if not isinstance(value, cst.Tuple) else [f"return[{i}]" for i in range(len(elements))]
        )
        found.append({p: gatherer._role(e) for p, e in zip(paths, elements, strict=True)})
    return found


def unordered_outputs(source: str, entry: str, known: Mapping[str, Any] | None = None) -> list[UnorderedRule]:
    """`[[compare.unordered]]` rules for `entry`'s returned values (empty when every row has one order)."""
    rules: list[UnorderedRule] = []
    for roles in entry_returns(source, entry, GatherUnorderedOutputs(known or {})):
        for path, (role, why) in roles.items():
            if role != KEY or any(r.key == path for r in rules):
                continue
            followers = [p for p, (r, w) in roles.items() if r == VALUES and w == why]
            rules.append(UnorderedRule(path, followers, why))
    return rules
