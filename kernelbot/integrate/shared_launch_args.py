"""Transformer: the arguments that every launch in one statement passes first, written once.

A module whose entry picks a kernel by size (one pass in registers up to a size, two passes in chunks
above it) launches each kernel with the same tensors and scalars, one keyword to a line: six lines a launch
that a reviewer compares to find that they agree. Where two or more launches inside one statement of a
function (the branches of one size test) pass the same names to their kernels' first parameters, in the
kernels' order, and at least three of them, the names are gathered once in a tuple ahead of that statement
and each launch passes it positionally: `_rms_norm_kernel_large[(rows,)](*args, BLOCK_COL=BLOCK_COL, ...)`.
A name the statement rebinds is not gathered (the tuple would hold its earlier value), so every launch
receives what it did. Source text only, never run.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import jit_functions, names

_LEAST = 3  # fewer shared arguments read as well in each launch
_TUPLE_NAMES = ("args", "launch_args")
_BINDS = m.AssignTarget() | m.AugAssign() | m.AnnAssign() | m.For() | m.NamedExpr() | m.AsName()


def shared_launch_args(module: cst.Module) -> cst.Module:
    """`module` with the leading arguments its launches share gathered, statement by statement."""
    kernels = {name: [p.name.value for p in fn.params.params] for name, fn in jit_functions(module).items()}
    if not kernels:
        return module
    return module.visit(_SharedLaunchArgs(kernels))


def _launches(statement: cst.CSTNode, kernels: dict[str, list[str]]) -> list[tuple[cst.Call, str]]:
    """The `kernel[grid](...)` calls inside `statement`, each with the kernel it launches."""
    found = []
    for node in m.findall(statement, m.Call(func=m.Subscript(value=m.Name()))):
        call = cst.ensure_type(node, cst.Call)
        kernel = cst.ensure_type(cst.ensure_type(call.func, cst.Subscript).value, cst.Name).value
        if kernel in kernels:
            found.append((call, kernel))
    return found


def _leading(call: cst.Call, params: list[str]) -> list[str]:
    """The names `call` passes by keyword to its kernel's first parameters, in order, until one is not."""
    passed: list[str] = []
    for arg, param in zip(call.args, params, strict=False):
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword != param or arg.star or not isinstance(arg.value, cst.Name):
            break
        passed.append(arg.value.value)
    return passed


def _rebound(statement: cst.CSTNode) -> set[str]:
    """Names `statement` binds anywhere inside it."""
    return set().union(*(names(node) for node in m.findall(statement, _BINDS)), set())


class _SharedLaunchArgs(cst.CSTTransformer):
    def __init__(self, kernels: dict[str, list[str]]) -> None:
        super().__init__()
        self.kernels = kernels

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if updated_node.decorators or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        taken = names(updated_node)
        body: list[cst.BaseStatement] = []
        for statement in updated_node.body.body:
            gathered = self._gathered(statement, taken)
            if gathered is None:
                body.append(statement)
                continue
            tuple_line, statement, name = gathered
            taken.add(name)
            body += [tuple_line, statement]
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))

    def _gathered(
        self, statement: cst.BaseStatement, taken: set[str]
    ) -> tuple[cst.SimpleStatementLine, cst.BaseStatement, str] | None:
        """(the tuple's line, `statement` launching with it, the tuple's name), or None."""
        launches = _launches(statement, self.kernels)
        if len(launches) < 2:
            return None
        leading = [_leading(call, self.kernels[kernel]) for call, kernel in launches]
        shared: list[str] = []
        rebound = _rebound(statement)
        for values in zip(*leading, strict=False):
            if len(set(values)) != 1 or values[0] in rebound:
                break
            shared.append(values[0])
        name = next((n for n in _TUPLE_NAMES if n not in taken), None)
        if len(shared) < _LEAST or name is None:
            return None
        tuple_line = cst.parse_statement(f"{name} = ({', '.join(shared)})")
        gather = _Gathered({id(call) for call, _ in launches}, len(shared), name)
        launching = statement.visit(gather)
        if not isinstance(launching, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return None  # _Gathered rewrites calls only: a statement stays a statement
        return cst.ensure_type(tuple_line, cst.SimpleStatementLine), launching, name


class _Gathered(cst.CSTTransformer):
    """The launches of `ids`: their first `count` arguments become `*name`."""

    def __init__(self, ids: set[int], count: int, name: str) -> None:
        super().__init__()
        self.ids, self.count, self.name = ids, count, name

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if id(original_node) not in self.ids:
            return updated_node
        args = list(updated_node.args)
        star = cst.Arg(value=cst.Name(self.name), star="*", comma=args[self.count - 1].comma)
        return updated_node.with_changes(args=[star, *args[self.count :]])
