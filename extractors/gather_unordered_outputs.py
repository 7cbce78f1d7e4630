"""Gatherer: outputs whose rows come in no fixed order. `torch.topk(..., sorted=False)` leaves the order of
each row to the implementation; when its indices reach a returned value, that value is a
`[[compare.unordered]]` key, and the returned values computed from the selected values (`topk` values,
`gather(dim, ids)`, elementwise ops on them) follow it. A sort is not unordered (its rows are ordered by
value; only ties are open, which `gather_tied_outputs` declares), nor is a sorted top-k.

Order-free consumers (`scatter`, reductions such as `sum`) end the trail: `zeros.scatter_(-1, idx, vals)`
puts every element back in its place. `sorted=` given as an expression is evaluated with the parameters'
known values (defaults, the spec's plain values); one that cannot be evaluated counts as unsorted.

The trail goes through helpers of any depth: a call of a function of the reference is followed into its
body, its parameters holding the roles of the arguments it was called with, and what it returns (a selection,
a key, values, or a tuple of them) holds the roles found there."""

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
HELPER_DEPTH = 12  # helpers followed into helpers; deeper calls hold no role


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
        self.tuples: dict[str, list[tuple[str | None, str]]] = {}  # names bound to a helper's returned tuple
        self.returns: list[cst.BaseExpression] = []
        self.functions: dict[str, cst.FunctionDef] = {}  # the module's functions: helpers to follow
        self.depth = 0
        self._summaries: dict[int, _Returned | None] = {}  # per call node

    def with_functions(self, module: cst.Module) -> GatherUnorderedOutputs:
        self.functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
        return self

    def leave_Assign(self, original_node: cst.Assign) -> None:
        value = original_node.value
        for target in original_node.targets:
            self._bind(target.target, value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        source = self._result_of(value) if isinstance(value, cst.Call) else None
        returned = self._helper(value)
        if isinstance(target, (cst.Tuple, cst.List)) and source is None and returned and returned.elements:
            for element, (role, why) in zip(target.elements, returned.elements, strict=False):
                self._forget(element.value)
                if isinstance(element.value, cst.Name) and role is not None:
                    self.roles[element.value.value], self.why[element.value.value] = role, why
            return
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
        result = self._result_of(value) if isinstance(value, cst.Call) else None
        if result is not None:
            self.results[target.value] = result
        if returned is not None and returned.elements:
            self.tuples[target.value] = returned.elements

    def _forget(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.roles.pop(target.value, None)
            self.results.pop(target.value, None)
            self.tuples.pop(target.value, None)

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
        """`torch.topk(...)` itself, a name bound to it, or a helper returning it -> why its rows are
        unordered; else None."""
        if isinstance(value, cst.Name):
            return self.results.get(value.value)
        returned = self._helper(value)
        if returned is not None and returned.result is not None:
            return returned.result
        return self._selection(value)

    # -- helpers ---------------------------------------------------------------------------------------------
    def _helper(self, value: cst.BaseExpression) -> _Returned | None:
        """What a call of one of the module's functions returns, given the roles of its arguments."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
            return None
        function = self.functions.get(value.func.value)
        if function is None or self.depth >= HELPER_DEPTH:
            return None
        if id(value) in self._summaries:
            return self._summaries[id(value)]
        self._summaries[id(value)] = None  # a recursive call holds no role
        child = type(self)(self.known)
        child.functions, child.depth = self.functions, self.depth + 1
        for name, arg in _bound_arguments(function, value).items():
            role, why = self._role(arg)
            if role is not None:
                child.roles[name], child.why[name] = role, why
            result = self._result_of(arg)
            if result is not None:
                child.results[name] = result
        function.body.visit(child)
        summary = _Returned.of(child)
        self._summaries[id(value)] = summary
        return summary

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
        returned = self._helper(value)
        if returned is not None:
            return returned.single
        if isinstance(value, cst.Subscript) and isinstance(value.value, (cst.Call, cst.Name)):
            elements = (
                self.tuples.get(value.value.value)
                if isinstance(value.value, cst.Name)
                else (self._helper(value.value) or _Returned()).elements
            )
            index = value.slice[0].slice if len(value.slice) == 1 else None
            if elements and isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                position = int(index.value.value)
                return elements[position] if position < len(elements) else (None, "")
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
                index_arg = arg_value(
                    value, 1 if method == "gather" else 0, "index" if method == "gather" else "indices"
                )
                role, why = self._role(index_arg) if index_arg is not None else (None, "")
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


@dataclass
class _Returned:
    """What a helper returns: the role of the whole value, of each element of a returned tuple, and the
    selection it returns as is (`return torch.topk(...)`), if any."""

    single: tuple[str | None, str] = (None, "")
    elements: list[tuple[str | None, str]] | None = None
    result: str | None = None

    @classmethod
    def of(cls, gatherer: GatherUnorderedOutputs) -> _Returned:
        returned = cls()
        for value in gatherer.returns:
            result = gatherer._result_of(value)
            if result is not None:
                returned.result = returned.result or result
                continue
            passed = gatherer._helper(value)
            if isinstance(value, cst.Name) and value.value in gatherer.tuples:
                roles: list[tuple[str | None, str]] | None = gatherer.tuples[value.value]
            elif passed is not None and passed.elements is not None:
                roles = passed.elements  # `return other_helper(...)`: its tuple, passed on
            elif isinstance(value, cst.Tuple):
                roles = [gatherer._role(e.value) for e in value.elements]
            else:
                roles = None
            if roles is not None:
                if returned.elements is None:
                    returned.elements = list(roles)
                elif len(roles) == len(returned.elements):  # another return: a key anywhere stays a key
                    pairs = zip(returned.elements, roles, strict=True)
                    returned.elements = [_stronger(a, b) for a, b in pairs]
            else:
                returned.single = _stronger(returned.single, gatherer._role(value))
        return returned


def _stronger(a: tuple[str | None, str], b: tuple[str | None, str]) -> tuple[str | None, str]:
    if a[0] == KEY or b[0] is None:
        return a
    return b if a[0] is None or b[0] == KEY else a


def _bound_arguments(function: cst.FunctionDef, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """The helper's parameter names, each with the argument expression a call passes it."""
    positional = [p.name.value for p in [*function.params.posonly_params, *function.params.params]]
    bound: dict[str, cst.BaseExpression] = {}
    index = 0
    for arg in call.args:
        if arg.star:
            break  # *args / **kwargs: the rest cannot be matched
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg.value
        elif index < len(positional):
            bound[positional[index]] = arg.value
            index += 1
    return bound


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
    gatherer.with_functions(module)
    function.body.visit(gatherer)
    found = []
    for value in gatherer.returns:
        returned = gatherer._helper(value)
        if returned is not None and returned.elements is not None:  # `return helper(...)` of a tuple
            found.append({f"return[{i}]": role for i, role in enumerate(returned.elements)})
            continue
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
