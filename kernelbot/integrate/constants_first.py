"""Module constants first: each defined at the top of the module, after its imports.

A crossover's flattened routes leave a route's constants where that route's code was: `WARPS_SCALE_SMALL =
2.0` between two kernels, `ROWS_LARGE = 2  # rows per program` above the kernel that reads it. A reviewer
looks for a module's constants at its top, where hand-written kernels define them. A constant here is an
upper-case name bound once, at module level, to a literal (a number, a string, a bool); it moves with the
comments above and beside it, in the order the module had it. Nothing else moves, and a name bound twice
stays where it is. Source text only, never run.
"""

from __future__ import annotations

from collections import Counter

import libcst as cst
import libcst.matchers as m

_LITERAL = (
    m.Integer()
    | m.Float()
    | m.SimpleString()
    | m.Name("True")
    | m.Name("False")
    | m.UnaryOperation(operator=m.Minus(), expression=m.Integer() | m.Float())
)


def constants_first(module: cst.Module) -> cst.Module:
    """`module` with the constants below its first function or class moved above it."""
    body = list(module.body)
    first = next((k for k, s in enumerate(body) if isinstance(s, (cst.FunctionDef, cst.ClassDef))), None)
    if first is None:
        return module
    bound = Counter(name for statement in body for name in _bound_names(statement))
    late = [k for k in range(first, len(body)) if _constant(body[k], bound)]
    if not late:
        return module
    moved = [_without_blank_lines(cst.ensure_type(body[k], cst.SimpleStatementLine)) for k in late]
    if first > 0 and not _constant(body[first - 1], bound):  # after the imports, one blank line
        moved[0] = moved[0].with_changes(leading_lines=[cst.EmptyLine(), *moved[0].leading_lines])
    moving = set(late)
    rest = [s for k, s in enumerate(body) if k not in moving]
    return module.with_changes(body=[*rest[:first], *moved, *rest[first:]])


def _constant(statement: cst.CSTNode, bound: Counter[str]) -> bool:
    if not m.matches(statement, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())])])):
        return False
    assign = cst.ensure_type(cst.ensure_type(statement, cst.SimpleStatementLine).body[0], cst.Assign)
    name = cst.ensure_type(assign.targets[0].target, cst.Name).value
    return name.isupper() and bound[name] == 1 and m.matches(assign.value, _LITERAL)


def _bound_names(statement: cst.CSTNode) -> list[str]:
    """The names a module-level statement binds (assignments, definitions)."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return [statement.name.value]
    targets = m.findall(statement, m.AssignTarget(m.Name()) | m.AnnAssign(target=m.Name()))
    found = []
    for target in targets:
        name = target.target if isinstance(target, (cst.AssignTarget, cst.AnnAssign)) else None
        if isinstance(name, cst.Name):
            found.append(name.value)
    return found


def _without_blank_lines(statement: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """The statement with its comment lines above it kept and its blank lines dropped."""
    return statement.with_changes(leading_lines=[line for line in statement.leading_lines if line.comment])
