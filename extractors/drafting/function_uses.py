"""What the function-level gatherer (gather_function_uses) collects for one function: its parameters' facts,
the ties between their dimensions, and the calls it makes (which gather_param_uses maps onto the entry)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from extractors.drafting.facts import ParamFacts, Tie
from extractors.drafting.local_values import LocalValues


@dataclass
class CallSite:
    callee: str
    line: int
    positional: list[cst.BaseExpression]
    keywords: dict[str, cst.BaseExpression]


@dataclass
class FunctionUses:
    name: str
    params: list[str]
    facts: dict[str, ParamFacts]
    ties: list[Tie] = field(default_factory=list)
    broadcasts: list[tuple[str, str, str]] = field(default_factory=list)  # two tensors combined elementwise
    dtype_ties: list[tuple[str, str, str]] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    line_roots: dict[int, set[str]] = field(default_factory=dict)
    values: LocalValues | None = None
