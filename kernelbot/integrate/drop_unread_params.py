"""Transformer: the kernel's entry takes only the parameters its body names.

The search calls a candidate's entry with every argument of the reference, so the entry repeats the
reference's signature, options the kernel never reads included (SGLang RMSNorm's `quant_linear`,
`post_residual_addition`; a router's `hidden_states`). The guard checks those options and keeps the whole
signature; the entry a reviewer reads takes what the kernel uses, as the engines' own wrappers do
(`fused_add_rmsnorm(input, residual, weight, eps)`), and the call site passes just that.

A parameter goes only when no name in the body is it (a read, a rebinding, a `del`: any mention keeps it).
`*args`, `**kwargs` and positional-only parameters stay: the call site forwards those as written.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import libcst as cst

from evolution.mutators.crossover.alike import names


def unread_parameters(function: cst.FunctionDef) -> list[str]:
    """`function`'s plain and keyword-only parameters that its body never names, in signature order."""
    named = names(function.body)
    params = function.params
    droppable = [*params.params, *params.kwonly_params]
    return [p.name.value for p in droppable if p.name.value not in named]


class DropUnreadParamsTransformer(cst.CSTTransformer):
    """Removes the parameters its body never names from the module-level function `name`. A bare `*` left
    with no keyword-only parameter after it goes too."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def visit_Module(self, node: cst.Module) -> bool:
        return False  # module-level statements only: a method or nested function of that name is not it

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = [
            _without_unread(s) if isinstance(s, cst.FunctionDef) and s.name.value == self.name else s
            for s in updated_node.body
        ]
        return updated_node.with_changes(body=body)


def _without_unread(function: cst.FunctionDef) -> cst.FunctionDef:
    params = function.params
    if params.posonly_params or isinstance(params.star_arg, cst.Param):
        return function  # the call site forwards these by position, as written
    unread = set(unread_parameters(function))
    return without_parameters(function, unread) if unread else function


def without_parameters(function: cst.FunctionDef, gone: set[str]) -> cst.FunctionDef:
    """`function` without the plain and keyword-only parameters named in `gone` (a bare `*` left with no
    keyword-only parameter after it goes too)."""
    params = function.params
    kept = [p for p in params.params if p.name.value not in gone]
    kwonly = [p for p in params.kwonly_params if p.name.value not in gone]
    star = params.star_arg
    if not kwonly and isinstance(star, cst.ParamStar):
        star = cst.MaybeSentinel.DEFAULT
    # Commas as libcst places them: none after the last, so the formatter is free to join the shorter
    # signature on one line (a trailing comma would keep it one parameter a line).
    changed = params.with_changes(params=_commas(kept), kwonly_params=_commas(kwonly), star_arg=star)
    return function.with_changes(params=changed)


def _commas(params: list[cst.Param]) -> list[cst.Param]:
    return [p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in params]


def called_as_the_reference(
    entry: Callable[..., Any], reference: inspect.Signature, *, always: bool = False
) -> Callable[..., Any]:
    """`entry` callable with the arguments of the reference whose signature is `reference`: it is passed
    the ones it takes. What runs a module's entry on a task's inputs (make_inputs builds them for the
    reference). `entry` itself where it takes every parameter, or forwards by position, unless `always`
    (the adapter's own cost on both sides of a timed pair)."""
    taken = inspect.signature(entry).parameters
    by_position = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL)
    passes_through = set(reference.parameters) <= set(taken) or any(
        p.kind in by_position for p in taken.values()
    )
    if passes_through and not always:
        return entry
    positional = [
        n for n, p in reference.parameters.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]

    def call(*args: Any, **kwargs: Any) -> Any:
        given = {**dict(zip(positional, args, strict=False)), **kwargs}  # fewer args: defaults
        return entry(**{name: value for name, value in given.items() if name in taken})

    return call
