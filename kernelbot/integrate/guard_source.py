"""Renders the guard appended to a kernel module: an `ENABLED` switch, two small helpers and the predicate
`can_use_<op>_triton(<the entry's parameters>)`, which is True only inside the Envelope. The text comes from
templates/guard.py.j2; this module turns each rule into one boolean expression."""

from __future__ import annotations

import math

import libcst as cst

from kernelbot.integrate.envelope import Envelope, TensorRule, ValueRule
from kernelbot.integrate.templates_env import environment


def render_guard(
    envelope: Envelope, entry: cst.FunctionDef, guard: str, kernel: str, line_length: int = 88
) -> str:
    """Source of the guard for `entry` (the candidate's entry function, whose parameters it copies)."""
    conditions = ["ENABLED"]
    conditions += [_tensor_condition(rule) for rule in envelope.tensors]
    conditions += [c for c in (_value_condition(rule) for rule in envelope.values) if c]
    if envelope.tensors:
        names = ", ".join(rule.name for rule in envelope.tensors)
        conditions.append(f"not _needs_autograd({names})")
    return (
        environment(line_length)
        .get_template("guard.py.j2")
        .render(
            guard=guard,
            kernel=kernel,
            params=_parameters(entry),
            conditions=conditions,
            has_tensors=bool(envelope.tensors),
            device_type=envelope.device_type,
        )
    )


def _tensor_condition(rule: TensorRule) -> str:
    dtypes = ", ".join(f"torch.{d}" for d in rule.dtypes)
    ranks = ", ".join(str(r) for r in rule.ranks)
    sizes = ", ".join(f"{dim}: ({', '.join(map(str, allowed))},)" for dim, allowed in rule.fixed_dims)
    call = f"_is_checked_tensor({rule.name}, ({dtypes},), ({ranks},), {{{sizes}}}"
    call += ")" if rule.contiguous else ", contiguous=False)"
    return f"({rule.name} is None or {call})" if rule.optional else call


def _value_condition(rule: ValueRule) -> str:
    if rule.free:
        return ""
    parts = [_equals(rule.name, value) for value in rule.values]
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"


def _equals(name: str, value: object) -> str:
    if value is None or isinstance(value, bool):
        return f"{name} is {value!r}"
    if isinstance(value, float) and math.isnan(value):
        return f"{name} != {name}"  # NaN is the one value unequal to itself
    return f"{name} == {_literal(value)}"


def _literal(value: object) -> str:
    """Python source for a guard's value; `repr` of an infinite float (`-inf`) is no Python expression."""
    if isinstance(value, float) and math.isinf(value):
        return f'float("{value!r}")'
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) else f"[{inner}]"
    return repr(value)


def _parameters(entry: cst.FunctionDef) -> str:
    """The entry's parameter list without annotations (the guard needs no types, and the candidate's
    annotations may name things the kernel module does not import)."""

    class _DropAnnotations(cst.CSTTransformer):
        def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
            return updated_node.with_changes(annotation=None)

    params = entry.params.visit(_DropAnnotations())
    return cst.Module([]).code_for_node(params)  # type: ignore[arg-type]
