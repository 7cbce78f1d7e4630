"""Renders the guard appended to a kernel module: an `ENABLED` switch, a small helper and the predicate
`can_use_<op>_triton(<the entry's parameters>)`, which is True only inside the Envelope. The text comes from
templates/guard.py.j2; this module turns each rule into one boolean expression. No condition names a size:
tensors are checked for device, dtype, rank, contiguity and the int32 element bound, sizes and float
parameters for their type only, switches for the values the kernel was checked on. The one size limit is a
real one: a register extent the entry pads with `triton.next_power_of_2(<size>)` (a constexpr the kernel is
compiled for) must fit Triton's largest tensor, 2**20 elements; a padded extent capped by `min(BLOCK, ...)`
is tiled and has none. A padded extent that is a size split into a parameter's count of groups (`e //
num_expert_group`, a view into groups) also needs that count to divide the size, as the reference's view
does (it raises otherwise: the guard sends such a call to it)."""

from __future__ import annotations

import ast
import math

import libcst as cst

from kernelbot.integrate.envelope import Envelope, TensorRule, ValueRule
from kernelbot.integrate.templates_env import environment


def render_guard(envelope: Envelope, entry: cst.FunctionDef, guard: str, line_length: int = 88) -> str:
    """Source of the guard for `entry` (the candidate's entry function, whose parameters it copies)."""
    conditions = ["ENABLED"]
    conditions += [_tensor_condition(rule) for rule in envelope.tensors]
    conditions += [link.condition() for link in envelope.same_sizes]  # once each is known a tensor
    # Free ints in one check: a line each would restate the test per parameter.
    ints = [rule.name for rule in envelope.values if rule.free and rule.kind == "int"]
    if len(ints) > 1:
        conditions.append(f"all(type(v) is int for v in ({', '.join(ints)}))")
    conditions += [c for c in (_value_condition(rule, len(ints) > 1) for rule in envelope.values) if c]
    extents = padded_extents(entry)
    # A parameter the guard pins to ints (`num_expert_group == 8`, checked before these) needs no more
    # checks of its own: its values are known.
    pinned = {
        rule.name: [v for v in rule.values if type(v) is int]
        for rule in envelope.values
        if not rule.free and rule.values and all(type(v) is int for v in rule.values)
    }
    # A row split into `groups` equal parts (the reference's `view(n, groups, -1)`): whole groups only.
    quotients = [q for q in (_quotient(e) for e in extents) if q is not None]
    for dividend, divisor in quotients:
        if not all(v > 0 for v in pinned.get(divisor, [0])):
            conditions.append(f"{divisor} > 0")
        conditions.append(f"{dividend} % {divisor} == 0")
    # ... and no larger than its dividend: a quotient of a size bounded already needs no bound of its own;
    # nor a pinned parameter within the limit.
    extents = [
        e
        for e, q in zip(extents, map(_quotient, extents), strict=True)
        if (q is None or q[0] not in extents)
        and not all(v <= TRITON_MAX_TENSOR_NUMEL for v in pinned.get(e, [TRITON_MAX_TENSOR_NUMEL + 1]))
    ]
    # next_power_of_2(n) <= 2**20 exactly when n <= 2**20: the size itself is compared, several in one max().
    conditions += _bounds(extents, line_length)
    return (
        environment(line_length)
        .get_template("guard.py.j2")
        .render(
            guard=guard,
            params=_parameters(entry),
            conditions=conditions,
            has_tensors=bool(envelope.tensors),
            has_host=any(rule.host for rule in envelope.tensors),
            device_type=envelope.device_type,
        )
    )


# Triton's largest tensor (triton.language.core.TRITON_MAX_TENSOR_NUMEL): a block of more elements does not
# compile.
TRITON_MAX_TENSOR_NUMEL = 1 << 20


def _bounds(sizes: list[str], line_length: int) -> list[str]:
    """`max(a, b) <= 2**20` for the padded sizes, one condition where it fits the guard's line (a line
    each would restate the limit per size), else one per size."""
    if len(sizes) < 2:
        return [f"{size} <= {TRITON_MAX_TENSOR_NUMEL}" for size in sizes]
    one = f"max({', '.join(sizes)}) <= {TRITON_MAX_TENSOR_NUMEL}"
    if len(one) + len("        and ") <= line_length:
        return [one]
    return [f"{size} <= {TRITON_MAX_TENSOR_NUMEL}" for size in sizes]


def _quotient(size: str) -> tuple[str, str] | None:
    """(dividend, divisor) of a padded size `a // b` whose divisor is a parameter (a group count the call
    passes): the kernel splits a row of `a` lanes into `b` groups of `a // b`, which cover it only when `b`
    divides `a`, as the reference's view into groups requires. None for any other size (a literal divisor
    halves a row, as slicing does, and needs no more)."""
    expr = ast.parse(size, mode="eval").body
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.FloorDiv) and isinstance(expr.right, ast.Name):
        return ast.unparse(expr.left), expr.right.id
    return None


_ALLOWED_NAMES = {"triton", "min", "max", "len", "int"}


def padded_extents(entry: cst.FunctionDef) -> list[str]:
    """The sizes of the entry's `triton.next_power_of_2(<size>)` calls that are expressions over its
    parameters once the entry's own single assignments are substituted (`s1 = x.shape[1]`), and which no
    `min(...)` caps: each pads a register extent the kernel is compiled for."""
    tree = ast.parse(cst.Module([entry]).code)
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    params = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    assigned: dict[str, ast.expr] = {}
    counts: dict[str, int] = {}
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name):
            pairs = [(target.id, node.value)]
        elif _unpacks_shape(target, node.value):  # `n, d = x.shape`: n is x.shape[0], d x.shape[1]
            shape = ast.unparse(node.value)
            elts = target.elts  # type: ignore[attr-defined]
            pairs = [(e.id, ast.parse(f"{shape}[{k}]", mode="eval").body) for k, e in enumerate(elts)]
        else:
            continue
        for name, value in pairs:
            counts[name] = counts.get(name, 0) + 1
            assigned[name] = value
    single = {n: v for n, v in assigned.items() if counts[n] == 1 and n not in params}
    capped = {
        id(arg)
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "min"
        for arg in node.args
    }
    out: list[str] = []
    for node in ast.walk(function):
        if id(node) in capped or not _is_next_power_of_2(node):
            continue
        size = _substitute(node.args[0], single)  # type: ignore[attr-defined]
        if size is None:
            continue
        names = {n.id for n in ast.walk(size) if isinstance(n, ast.Name)}
        if names <= params | _ALLOWED_NAMES:
            text = ast.unparse(size)
            if text not in out:
                out.append(text)
    return out


def _unpacks_shape(target: ast.expr, value: ast.expr) -> bool:
    return (
        isinstance(target, ast.Tuple)
        and all(isinstance(e, ast.Name) for e in target.elts)
        and isinstance(value, ast.Attribute)
        and value.attr == "shape"
    )


def _is_next_power_of_2(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and len(node.args) == 1
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "next_power_of_2"
    )


def _substitute(expr: ast.expr, single: dict[str, ast.expr], depth: int = 0) -> ast.expr | None:
    """`expr` with the names the entry assigns once replaced by what they hold (None past a few levels)."""
    if depth > 6:
        return None

    class _Replace(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.copy_location(single[node.id], node) if node.id in single else node

    replaced = _Replace().visit(ast.parse(ast.unparse(expr), mode="eval")).body
    if any(isinstance(n, ast.Name) and n.id in single for n in ast.walk(replaced)):
        return _substitute(replaced, single, depth + 1)
    return replaced


def _tensor_condition(rule: TensorRule) -> str:
    # A trailing comma only where a tuple needs one: the formatter would otherwise lay a several-dtype
    # tuple out one item a line (its magic trailing comma).
    dtypes = ", ".join(f"torch.{d}" for d in rule.dtypes) + ("," if len(rule.dtypes) == 1 else "")
    ranks = ", ".join(str(r) for r in rule.ranks) + ("," if len(rule.ranks) == 1 else "")
    call = f"_is_checked_tensor({rule.name}, ({dtypes}), ({ranks})"
    call += "" if rule.contiguous else ", contiguous=False"
    call += ', device="cpu")' if rule.host else ")"
    return f"({rule.name} is None or {call})" if rule.optional else call


def _value_condition(rule: ValueRule, ints_grouped: bool = False) -> str:
    if rule.free:
        if rule.kind == "int":  # an int, not a bool (nor an int subclass, which the cases never had)
            return "" if ints_grouped else f"type({rule.name}) is int"
        if rule.kind == "float":
            return f"isinstance({rule.name}, (int, float))"
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
