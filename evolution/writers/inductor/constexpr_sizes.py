"""Sizes fixed for the served model as tl.constexpr in the kernels of the Inductor seed.

torch.compile's own kernels have such sizes as literals (it specialises on each shape it meets), so that an
index's division by a head size compiles to a shift or a multiply. Traced with dynamic shapes, the seed's
kernels took them as run-time values (`x0 = xindex % ks0`). The host code knows which of its launch
arguments follow only fixed inputs (host.HostCode.fixed_sizes); those parameters become tl.constexpr: one
compilation per model, none per call, since a size that follows the tokens is never among them.

A constexpr has no methods: a cast of a value built from sizes alone (`ks0.to(tl.float32)`, a mean's
divisor; `(ks0 // 2).to(tl.int64)`, the rotary's half head, or the same through a local) is written as
`tl.cast(...)`, which takes a constexpr, so that the size can be one (the rotary's `xindex % ks0` then
divides by a constant, as torch.compile's own kernel does). A size stays a run-time value where the kernel
calls another method on such a value. A method on a tensor that reads it (`tl.load(ptr + ks0 *
x1).to(tl.float32)`) is no obstacle.
"""

from __future__ import annotations

import ast

_CONSTEXPR = "tl.constexpr"


def with_constexpr_sizes(source: str, kernel: str, sizes: set[str]) -> str:
    """`source` (a kernel's functions, as the converter unparsed them) with the parameters `sizes` of the
    function `kernel` annotated tl.constexpr, but for those a method is called on (module docstring)."""
    if not sizes:
        return source
    module = ast.parse(source)
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and node.name == kernel:
            _CastsOfConstants(_constants(node, sizes)).visit(node)
            taken = sizes - _read_as_tensors(node, sizes)
            for arg in node.args.args:
                if arg.arg in taken and arg.annotation is None:
                    arg.annotation = ast.parse(_CONSTEXPR, mode="eval").body
    return "\n\n\n".join(ast.unparse(ast.fix_missing_locations(node)) for node in module.body)


class _CastsOfConstants(ast.NodeTransformer):
    """`(ks0 // 2).to(tl.int64)` -> `tl.cast(ks0 // 2, tl.int64)` where the value is built from sizes
    alone: the same cast, which a constexpr takes."""

    def __init__(self, constants: dict[str, set[str]]) -> None:
        self.constants = constants

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "to":
            return node
        if _constant_sizes(func.value, self.constants):
            cast = ast.Attribute(ast.Name("tl", ast.Load()), "cast", ast.Load())
            return ast.Call(cast, [func.value, *node.args], node.keywords)
        return node


def _read_as_tensors(function: ast.FunctionDef, sizes: set[str]) -> set[str]:
    """The sizes a method is called on a value of, built from constants alone (those sizes, the kernel's
    constexpr parameters, literals and locals assigned from them)."""
    constants = _constants(function, sizes)
    read: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute):
            found = _constant_sizes(node.value, constants)
            if found:
                read |= found
    return read


def _constants(function: ast.FunctionDef, sizes: set[str]) -> dict[str, set[str]]:
    """Constant-valued name -> the sizes in it: the sizes themselves, the kernel's constexpr parameters and
    the locals assigned from them, literals and each other."""
    constants: dict[str, set[str]] = {s: {s} for s in sizes}
    constants.update(
        (a.arg, set())
        for a in function.args.args
        if a.annotation is not None and ast.unparse(a.annotation) == _CONSTEXPR
    )
    # Until nothing changes: a loop's statements come after the code below it in ast.walk's order. A local
    # assigned twice keeps what either assignment carries (Inductor assigns each once; this errs on the
    # side of a run-time value).
    assignments = [
        (statement.targets[0].id, statement.value)
        for statement in ast.walk(function)
        if isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ]
    changed = True
    while changed:
        changed = False
        for name, value in assignments:
            found = _constant_sizes(value, constants)
            if found is not None and not (name in constants and found <= constants[name]):
                constants[name] = constants.get(name, set()) | found
                changed = True
    return constants


def _constant_sizes(node: ast.expr, constants: dict[str, set[str]]) -> set[str] | None:
    """The sizes a constant-valued expression is built from, or None where it is not constant (a tensor,
    a call, a module such as `tl`)."""
    if isinstance(node, ast.Constant):
        return set()
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    parts: list[ast.expr]
    if isinstance(node, ast.BinOp):
        parts = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp):
        parts = [node.operand]
    elif isinstance(node, ast.Compare):
        parts = [node.left, *node.comparators]
    else:
        return None
    found: set[str] = set()
    for part in parts:
        inner = _constant_sizes(part, constants)
        if inner is None:
            return None
        found |= inner
    return found
