"""The entry's parameters as read from the emitted reference (names, kinds, defaults, annotations)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from extractors.errors import ExtractionError


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "positional" | "keyword" | "varargs" | "varkw"
    annotation: str  # source text, "" when none
    default: str | None  # source text, None when required

    @property
    def required(self) -> bool:
        return self.default is None and self.kind in ("positional", "keyword")


def entry_signature(source: str, entry: str) -> list[Param]:
    module = cst.parse_module(source)
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == entry:
            return _params(module, stmt.params)
    raise ExtractionError(f"the emitted reference defines no {entry}()")


def _params(module: cst.Module, params: cst.Parameters) -> list[Param]:
    out: list[Param] = []

    def one(param: cst.Param, kind: str) -> Param:
        annotation = module.code_for_node(param.annotation.annotation) if param.annotation else ""
        default = module.code_for_node(param.default) if param.default is not None else None
        return Param(param.name.value, kind, annotation, default)

    for param in [*params.posonly_params, *params.params]:
        out.append(one(param, "positional"))
    if isinstance(params.star_arg, cst.Param):
        out.append(one(params.star_arg, "varargs"))
    for param in params.kwonly_params:
        out.append(one(param, "keyword"))
    if isinstance(params.star_kwarg, cst.Param):
        out.append(one(params.star_kwarg, "varkw"))
    return out


def call_order(signature: list[Param], given: set[str]) -> list[tuple[str, str]]:
    """(name, "positional"|"keyword") for the given parameters: positional while no earlier one is skipped."""
    order: list[tuple[str, str]] = []
    positional_open = True
    for param in signature:
        if param.name not in given:
            if param.kind == "positional":
                positional_open = False
            continue
        kind = "positional" if param.kind == "positional" and positional_open else "keyword"
        order.append((param.name, kind))
    return order
