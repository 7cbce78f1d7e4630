"""A launch table of one test written as expressions, and a module constant read only as its default inlined.

A flat module's size table sets each varying constant in a local, then overrides it per tested interval
(size_tests.table_lines). Where one interval is tested, a code's branch reads

    warps_scale = WARPS_SCALE_SMALL
    if nbytes <= 300000:
        warps_scale = 0.5

with `WARPS_SCALE_SMALL = 1.0` defined at the top of the module for this one read. The same choice as a
reviewer writes it: `warps_scale = 0.5 if nbytes <= 300000 else 1.0`, and no constant (a flag set True
on the tested side is the test itself: `int64_offsets = nbytes <= 300000`). Only the shape
above is rewritten: a run of plain assignments to names, then one `if` (no `else`) that assigns only some
of them, where neither the test nor the new values read a name the run binds, nor a default a name the `if`
sets; the defaults are literals or names, so evaluating them first, as before, or only on the untested side
changes nothing. A module-level
number constant bound once and read once, as the whole value or the `else` of a local's assignment in a
function, is written as its number there, unless a comment says what it is. A table of several tests keeps
its `if` statements, one after another. Source text only, never run.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import names
from evolution.mutators.crossover.host_helpers import constant_bound

_NUMBER = m.Integer() | m.Float()
_DEFAULT = m.Name() | _NUMBER | m.SimpleString() | m.UnaryOperation(m.Minus(), _NUMBER)


def table_expressions(source: str) -> str:
    """`source` with its one-test launch tables as conditional expressions and the constants only they read
    as defaults inlined; `source` itself when it does not parse."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return source
    module = module.visit(_OneTestTables())
    # After the inlining, which may have made a default `False` (a constant the table's `else` read).
    return _defaults_inlined(module).visit(_FlagsAsTests()).code


def _assigned(statement: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """(name, value) of `name = value` alone on its line, else None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
        target = assign.targets[0].target
        if isinstance(target, cst.Name):
            return target.value, assign.value
    return None


def _is_default(statement: cst.CSTNode) -> bool:
    """`name = <a literal or a name>`."""
    found = _assigned(statement)
    return found is not None and m.matches(found[1], _DEFAULT)


class _OneTestTables(cst.CSTTransformer):
    """In every block: defaults, then one `if` overriding some of them, as one assignment per local."""

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = list(updated_node.body)
        out: list[cst.BaseStatement] = []
        k = 0
        while k < len(body):
            run_end = k
            while run_end < len(body) and _is_default(body[run_end]):
                run_end += 1
            run, after = body[k:run_end], body[run_end + 1 : run_end + 2]
            rewritten = None
            if run and run_end < len(body) and not _overrides_again(run, after):
                rewritten = _rewritten(run, body[run_end])
            if rewritten is None:
                out.append(body[k])
                k += 1
                continue
            out.extend(rewritten)
            k = run_end + 1
        return updated_node.with_changes(body=out)


def _overrides_again(run: list[cst.BaseStatement], after: list[cst.BaseStatement]) -> bool:
    """Whether the statement after the `if` is another `if` setting a name of the run: a table of several
    tests, which reads best as one test after another."""
    if not after or not isinstance(after[0], cst.If):
        return False
    bound = {found[0] for s in run if (found := _assigned(s))}
    return bool(bound & set().union(*(names(t) for t in m.findall(after[0], m.AssignTarget())), set()))


def _rewritten(run: list[cst.BaseStatement], test: cst.BaseStatement) -> list[cst.BaseStatement] | None:
    """The run of defaults with the `if` after it folded in, or None where the shape is not the table's."""
    if not isinstance(test, cst.If) or test.orelse is not None:
        return None
    if not isinstance(test.body, cst.IndentedBlock):
        return None
    defaults = dict(found for s in run if (found := _assigned(s)))
    if len(defaults) != len(run):  # a name bound twice in the run
        return None
    overrides: dict[str, cst.BaseExpression] = {}
    for statement in test.body.body:
        found = _assigned(statement)
        if found is None or found[0] not in defaults or found[0] in overrides:
            return None
        overrides[found[0]] = found[1]
    if not overrides or (test.leading_lines and any(line.comment for line in test.leading_lines)):
        return None
    read = names(test.test).union(*(names(v) for v in overrides.values()))
    if read & set(defaults):
        return None
    if set().union(*(names(v) for v in defaults.values())) & set(overrides):
        return None  # a default reading an overridden name would read the override once folded
    out: list[cst.BaseStatement] = []
    for statement in run:
        name, default = _assigned(statement) or ("", statement)
        if name in overrides and isinstance(default, cst.BaseExpression):
            value = cst.IfExp(test=test.test, body=overrides[name], orelse=default)
            assign = cst.ensure_type(cst.ensure_type(statement, cst.SimpleStatementLine).body[0], cst.Assign)
            statement = cst.ensure_type(statement, cst.SimpleStatementLine).with_changes(
                body=[assign.with_changes(value=value)]
            )
        out.append(statement)
    return out


def _flag_test(
    test: cst.BaseExpression, then: cst.BaseExpression, otherwise: cst.BaseExpression
) -> cst.Comparison | cst.UnaryOperation | None:
    """For `then if test else otherwise`: the test itself where that chooses True over False
    (`int64_offsets = 213189 < nbytes <= 2787806`), its negation for the reverse, where the test is a
    comparison (a bool, so the value is the same); None for any other choice."""
    if not isinstance(test, cst.Comparison) or test.lpar:
        return None
    if m.matches(then, m.Name("True")) and m.matches(otherwise, m.Name("False")):
        return test
    if m.matches(then, m.Name("False")) and m.matches(otherwise, m.Name("True")):
        parenthesized = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return cst.UnaryOperation(cst.Not(), parenthesized)
    return None


class _FlagsAsTests(cst.CSTTransformer):
    """Every `True if <comparison> else False` as the comparison (and the reverse as its negation)."""

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        flag = _flag_test(updated_node.test, updated_node.body, updated_node.orelse)
        if flag is None:
            return updated_node
        return (
            flag.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar) if updated_node.lpar else flag
        )


def _defaults_inlined(module: cst.Module) -> cst.Module:
    """Module-level number constants bound once and read once, as a local's whole value or `else` value in a
    function, written as their number where they are read; their definitions dropped."""
    numbers: dict[str, cst.BaseExpression] = {}
    for statement in module.body:
        name = constant_bound(statement)
        if name is not None and not _commented(statement) and (found := _assigned(statement)):
            numbers[name] = found[1]
    if not numbers:
        return module
    # Every Name node counts (keywords and attributes too): its binding and one read, nothing else.
    spelled = [cst.ensure_type(n, cst.Name).value for n in m.findall(module, m.Name())]
    inlinable = {name for name in numbers if spelled.count(name) == 2}
    if not inlinable:
        return module
    finder = _DefaultReads(inlinable)
    module.visit(finder)
    if not finder.found:
        return module
    values = {name: numbers[name] for name in finder.found}
    body = [s for s in module.body if not ((found := _assigned(s)) and found[0] in values)]
    return module.with_changes(body=body).visit(_Inlined(values))


def _commented(statement: cst.BaseStatement) -> bool:
    """Whether a comment says what the constant is (its line's own or one above it): it stays."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    above = any(line.comment for line in statement.leading_lines)
    return above or bool(statement.trailing_whitespace.comment)


class _DefaultReads(cst.CSTVisitor):
    """The constants of `names` read as a local assignment's whole value or its `else`, inside a function."""

    def __init__(self, candidates: set[str]) -> None:
        self.candidates = candidates
        self.found: set[str] = set()
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.depth or len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        value = node.value.orelse if isinstance(node.value, cst.IfExp) else node.value
        if isinstance(value, cst.Name) and value.value in self.candidates:
            self.found.add(value.value)


class _Inlined(cst.CSTTransformer):
    def __init__(self, values: dict[str, cst.BaseExpression]) -> None:
        self.values = values

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.values.get(updated_node.value, updated_node)
