"""Gatherer: outputs holding top-k or sort indices whose order among equal scores is open. `torch.topk`
(sorted or not) breaks ties as its kernel likes, and so does `sort`/`argsort` without `stable=True`; when the
indices reach a returned value, that value is a `[[compare.ties]]` key. Its `values` is the returned value
computed from the selected values alone (the top-k / sort values, elementwise ops on them: equal scores stay
equal), which the evaluator reads ties from when it cannot observe the tensor the selection ran over;
returned values gathered with the ids from another tensor (`scores.gather(1, ids)`) only `follow` them.

The same trail as `gather_unordered_outputs` (order-free consumers such as `scatter` end it); only which
selections count and the split between selected values and gathered ones differ."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from extractors.drafting.local_values import arg_value, dotted
from extractors.gather_unordered_outputs import KEY, VALUES, GatherUnorderedOutputs, entry_returns

FOLLOW = "follow"


@dataclass
class TieRule:
    key: str  # "return[1]"
    values: str | None = None  # the selected values ("return[0]")
    follow: list[str] = field(default_factory=list)  # values gathered with the ids
    why: str = ""


class GatherTiedOutputs(GatherUnorderedOutputs):
    """Which names hold tie-open indices (KEY), the values they select (VALUES) or values gathered with them
    (FOLLOW)."""

    GATHERED = FOLLOW

    def _selection(self, value: cst.BaseExpression) -> str | None:
        """`topk(...)` / a sort without `stable=True` -> which selection breaks ties freely; else None."""
        if not isinstance(value, cst.Call):
            return None
        name = dotted(value.func) if not isinstance(value.func, cst.Attribute) else value.func.attr.value
        method = name.rsplit(".", 1)[-1]
        if method == "topk":
            return "topk"
        if method in ("sort", "argsort"):
            stable = arg_value(value, 99, "stable")
            if stable is not None and self._evaluates_true(stable):
                return None
            return f"{method}() without stable=True"
        return None

    def _mixed(self, found: list[tuple[str | None, str]]) -> tuple[str | None, str]:
        # Selected values combined with gathered ones no longer keep the selection's ties.
        return next((r for r in found if r[0] == FOLLOW), found[0])


def tied_outputs(source: str, entry: str, known: Mapping[str, Any] | None = None) -> list[TieRule]:
    """`[[compare.ties]]` rules for `entry`'s returned values (empty when no selection's ids are returned)."""
    gatherer = GatherTiedOutputs(known or {})
    rules: list[TieRule] = []
    for roles in entry_returns(source, entry, gatherer):
        for path, (role, why) in roles.items():
            if role != KEY or any(r.key == path for r in rules):
                continue
            selected = [p for p, (r, w) in roles.items() if r == VALUES and w == why]
            gathered = [p for p, (r, w) in roles.items() if r == FOLLOW and w == why]
            values = selected[0] if selected else None
            rules.append(TieRule(path, values, [*selected[1:], *gathered], why))
    return rules
