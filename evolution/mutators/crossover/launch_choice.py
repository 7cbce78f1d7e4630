"""A size test whose branches launch the same kernel the same way but for the values of some keywords becomes
the choice of those values, then one launch.

After the merges of crossover/topk_method.py, a flat module's entry can read

    if nbytes <= 370728:
        _kernel[(programs,)](x_ptr=x, ..., TOPK_METHOD="bitonic", num_warps=_num_warps_small(...))
    else:
        _kernel[(programs,)](x_ptr=x, ..., TOPK_METHOD="twopass", num_warps=_num_warps_large(...))

a reviewer reads the launch twice to find the two values that differ. Here each differing keyword's value is
chosen first, by the same tests in the same order (`topk_method = "bitonic" if nbytes <= 370728 else
"twopass"`, `num_warps = ...`), and the branch's statements follow once, passing the chosen values: each size
runs what it ran before. A keyword whose value is a module constant in every branch (`ROWS=ROWS_small`) gives
its local to the branch's other reads of that constant too (`programs = triton.cdiv(n, rows)`), so that a grid
sized by it is written once as well, and a keyword whose values differ only in such constants is no choice of
its own (`num_warps=_num_warps(rows * n)`). A whole if/elif/else chain whose every branch holds one launch,
the same statements otherwise, or else the longest tail of one (an `elif` onwards) that does: the branches
before it stay and the choice becomes their `else` (a router's small inputs launch another kernel, its larger
ones one kernel with one of two top-k methods). A local name the function already uses is not taken, and a
value that reads a name the branches bind is not chosen ahead of them. Source text only, never run.
"""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import RenamedReads, code, identifiers

_LAUNCH = m.Call(func=m.Subscript())  # kernel[grid](...)
# The local that holds a keyword's chosen value: the keyword's own name, lower case (TOPK_METHOD ->
# topk_method, num_warps -> num_warps).


def launch_choices(source: str) -> str:
    """`source` with every size test that only chooses launch values written as that choice."""
    module = cst.parse_module(source)
    chosen = module.visit(LaunchChoice())
    return chosen.code if chosen.code != module.code else source


class LaunchChoice(cst.CSTTransformer):
    """An if/elif/else chain whose branches are one launch each, alike but for some keywords' values: those
    values chosen first, the branch's statements once."""

    def __init__(self) -> None:
        super().__init__()
        self._taken: list[set[str]] = []  # the identifiers of each enclosing function
        self._elifs: set[int] = set()  # `elif` branches: a chain is taken whole, from its `if`

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._taken.append(identifiers(node))

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._taken.pop()
        return updated_node

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self._elifs.add(id(node.orelse))

    def leave_If(
        self, original_node: cst.If, updated_node: cst.If
    ) -> cst.BaseStatement | cst.FlattenSentinel:
        branches = _branches(updated_node)
        if branches is None or not self._taken or id(original_node) in self._elifs:
            return updated_node
        whole = self._chosen(branches)
        if whole is not None:
            whole[0] = whole[0].with_changes(leading_lines=updated_node.leading_lines)
            return cst.FlattenSentinel(whole)
        # Else the longest tail of the chain (an elif onwards, to the else) that only chooses: the branches
        # before it stay, and it becomes their else.
        for k in range(1, len(branches) - 1):
            tail = self._chosen(branches[k:])
            if tail is not None:
                return _chain(branches[:k], cst.IndentedBlock(tail), updated_node)
        return updated_node

    def _chosen(
        self, branches: list[tuple[cst.BaseExpression | None, cst.BaseSuite]]
    ) -> list[cst.BaseStatement] | None:
        """The statements that choose the differing keywords' values by the branches' tests, then the
        branches' statements once; None unless the branches are one launch each, alike but for those."""
        values = [_launch_keywords(body) for _, body in branches]
        if any(v is None for v in values) or len({tuple(v) for v in values if v is not None}) != 1:
            return None
        known = [v for v in values if v is not None]
        differing = [kw for kw in known[0] if len({v[kw] for v in known}) > 1]
        constants = [kw for kw in differing if all(v[kw].isidentifier() for v in known)]
        # Per branch: each constant it passes for a keyword -> that keyword's local (ROWS_small -> rows).
        renames = [{v[kw]: kw.lower() for kw in constants} for v in known]
        # A value that differs only in those constants (`_num_warps(ROWS_small * n)`) reads their locals
        # instead (`_num_warps(rows * n)`): one expression, not a choice of its own.
        differing = [
            kw
            for kw in differing
            if kw in constants or len({_read_as(v[kw], r) for v, r in zip(known, renames, strict=True)}) > 1
        ]
        locals_ = {kw: kw.lower() for kw in differing}
        if not differing or set(locals_.values()) & self._taken[-1]:
            return None
        once = [_passed(body, locals_, r) for (_, body), r in zip(branches, renames, strict=True)]
        if len({code(b) for b in once}) != 1:
            return None
        bound = set().union(*(_bound(body) for _, body in branches))
        if any(identifiers(cst.parse_expression(v[kw])) & bound for v in known for kw in differing):
            return None  # chosen ahead of the branch, the value would read a name not yet bound
        assigns: list[cst.BaseStatement] = []
        for kw in differing:
            choice = known[-1][kw]
            for (test, _), value in zip(reversed(branches[:-1]), reversed(known[:-1]), strict=True):
                assert test is not None
                choice = f"{value[kw]} if {code(test)} else {choice}"
            assigns.append(cst.parse_statement(f"{locals_[kw]} = {choice}\n"))
        return [*assigns, *cst.ensure_type(once[0], cst.IndentedBlock).body]


def _chain(
    head: list[tuple[cst.BaseExpression | None, cst.BaseSuite]], last: cst.IndentedBlock, node: cst.If
) -> cst.If:
    """`node`'s chain cut to the branches of `head` (each with a test), `last` its else."""
    chain: cst.If | cst.Else = cst.Else(last)
    for test, body in reversed(head):
        assert test is not None
        chain = cst.If(test, body, orelse=chain)
    return cst.ensure_type(chain, cst.If).with_changes(leading_lines=node.leading_lines)


def _branches(node: cst.If) -> list[tuple[cst.BaseExpression | None, cst.BaseSuite]] | None:
    """(test, body) of each branch of the chain, the final else's test None; None without a final else."""
    branches: list[tuple[cst.BaseExpression | None, cst.BaseSuite]] = []
    current: cst.If | cst.Else | None = node
    while isinstance(current, cst.If):
        branches.append((current.test, current.body))
        current = current.orelse
    if current is None:
        return None
    branches.append((None, current.body))
    return branches


def _launch_keywords(body: cst.BaseSuite) -> dict[str, str] | None:
    """The keyword arguments of the branch's one launch, as source text, in order; None unless it holds
    exactly one launch."""
    launches = m.findall(body, _LAUNCH)
    if len(launches) != 1:
        return None
    args = cst.ensure_type(launches[0], cst.Call).args
    return {a.keyword.value: code(a.value) for a in args if a.keyword is not None}


def _bound(body: cst.BaseSuite) -> set[str]:
    """The names the statements of `body` bind (every name stored to: assignments, loop and with targets)."""
    tree = ast.parse(textwrap.dedent(code(body)).strip("\n") + "\n")
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _read_as(value: str, renames: dict[str, str]) -> str:
    """`value` (a keyword's source text) with its reads of the names of `renames` renamed."""
    read = cst.parse_expression(value).visit(RenamedReads(renames))
    assert isinstance(read, cst.BaseExpression)
    return code(read)


def _passed(body: cst.BaseSuite, locals_: dict[str, str], constants: dict[str, str]) -> cst.BaseSuite:
    """`body` with each keyword of `locals_` passing its local, and each read of a module constant of
    `constants` (the branch's value of a keyword) reading that keyword's local instead."""

    class _Passed(cst.CSTTransformer):
        def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
            keyword = updated_node.keyword
            if keyword is not None and keyword.value in locals_:
                return updated_node.with_changes(value=cst.Name(locals_[keyword.value]))
            return updated_node

    read = body.visit(RenamedReads(constants))
    assert isinstance(read, cst.BaseSuite)
    passed = read.visit(_Passed())
    assert isinstance(passed, cst.BaseSuite)
    return passed
