"""A warps scale of 1.0 folded out of the module that ships.

The fusion generator sizes warps with a helper that launch tuning can scale (generate._NUM_WARPS):

    WARPS_SCALE = 1.0

    def _num_warps(elements):
        warps = min(max(triton.next_power_of_2(elements) // 512, 1), 16)
        return min(max(int(warps * WARPS_SCALE), 1), 32)

The scale is the search's handle. Where it stayed at 1.0 the helper's last line changes nothing (`warps` is
an int from 1 to 16 already), and a reviewer reads a knob that does nothing: the shipped module returns the
first expression and drops the constant. A scale other than 1.0, a helper of another shape, or a constant
read anywhere else leaves the module as it is. Runs on source text only (never on candidate code's
execution); a crossover's copies (`WARPS_SCALE_small`, ...) are folded one by one.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

_SCALE_PREFIX = "WARPS_SCALE"
# warps = min(max(<expr>, 1), 16): an int from 1 to 16, so scaling by 1.0 and clamping to 1..32 keeps it.
_CLAMPED_1_16 = m.Call(
    func=m.Name("min"),
    args=[
        m.Arg(m.Call(func=m.Name("max"), args=[m.DoNotCare(), m.Arg(m.Integer("1"))])),
        m.Arg(m.Integer("16")),
    ],
)


def _scaled_return(warps: str, scale: str) -> m.Return:
    """`return min(max(int(<warps> * <scale>), 1), 32)`."""
    scaled = m.Call(
        func=m.Name("int"), args=[m.Arg(m.BinaryOperation(m.Name(warps), m.Multiply(), m.Name(scale)))]
    )
    return m.Return(
        m.Call(
            func=m.Name("min"),
            args=[
                m.Arg(m.Call(func=m.Name("max"), args=[m.Arg(scaled), m.Arg(m.Integer("1"))])),
                m.Arg(m.Integer("32")),
            ],
        )
    )


def unit_scales_folded(source: str) -> str:
    """`source` with every module-level `WARPS_SCALE... = 1.0` that only a warps helper of the generator's
    shape reads folded away (the helper returns its unscaled warps); otherwise `source` unchanged."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return source
    for scale in _unit_scales(module):
        folded = module.visit(_FoldScaledWarps(scale))
        if _reads(folded, scale) == 0:  # the helper was its only reader
            module = _without_constant(folded, scale)
    return module.code


def _unit_scales(module: cst.Module) -> list[str]:
    """Names of module constants `WARPS_SCALE... = 1.0` assigned once."""
    assigned: dict[str, list[cst.BaseExpression]] = {}
    for statement in module.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name) and target.value.startswith(_SCALE_PREFIX):
                    assigned.setdefault(target.value, []).append(small.value)
    return [
        name
        for name, values in assigned.items()
        if len(values) == 1 and isinstance(values[0], cst.Float) and float(values[0].value) == 1.0
    ]


def _reads(module: cst.Module, name: str) -> int:
    """How often `name` is read (its own assignment's target is not a read)."""
    names = m.findall(module, m.Name(name))
    targets = m.findall(module, m.AssignTarget(m.Name(name)))
    return len(names) - len(targets)


class _FoldScaledWarps(cst.CSTTransformer):
    """`warps = min(max(E, 1), 16)` and the scaled, clamped return after it become
    `return min(max(E, 1), 16)`."""

    def __init__(self, scale: str) -> None:
        self.scale = scale

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = list(updated.body)
        for i in range(len(body) - 1):
            first, second = body[i], body[i + 1]
            if not (
                isinstance(first, cst.SimpleStatementLine) and isinstance(second, cst.SimpleStatementLine)
            ):
                continue
            if len(first.body) != 1 or len(second.body) != 1:
                continue
            assign, ret = first.body[0], second.body[0]
            if not (
                m.matches(assign, m.Assign(targets=[m.AssignTarget(m.Name())], value=_CLAMPED_1_16))
                and isinstance(assign, cst.Assign)
            ):
                continue
            warps = cst.ensure_type(assign.targets[0].target, cst.Name).value
            if m.matches(ret, _scaled_return(warps, self.scale)):
                body[i : i + 2] = [first.with_changes(body=[cst.Return(assign.value)])]
                return updated.with_changes(body=body)
        return updated


def _without_constant(module: cst.Module, name: str) -> cst.Module:
    """`module` without its module-level assignment of `name`; the comments above it stay, above the
    statement after it."""
    assignment = m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name(name))])])
    body: list[cst.CSTNode] = []
    carried: list[cst.EmptyLine] = []
    for statement in module.body:
        if m.matches(statement, assignment):
            if any(line.comment is not None for line in statement.leading_lines):
                carried += statement.leading_lines
            continue
        if carried:
            statement = statement.with_changes(leading_lines=[*carried, *statement.leading_lines])
            carried = []
        body.append(statement)
    return module.with_changes(body=body)
