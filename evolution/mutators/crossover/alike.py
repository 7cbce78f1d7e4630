"""What the rules that merge a flat module's kernels share: finding its Triton kernels and the functions
they call, and replacing kernels alike but for one choice by one kernel that takes the choice as a
`tl.constexpr` parameter, each launch passing its value (topk_method: the top-k block; index_width: int64
or int32 offsets). Triton compiles only the branch a launch's constant selects, so every launch keeps its
code. Source text only, never run."""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst
import libcst.matchers as m

ROUTE_WORDS = r"small|medium|large|size\d+"  # what a crossover names each code for (crossover.routes)
ROUTE_SUFFIX = re.compile(rf"_({ROUTE_WORDS})$")
JIT_DECORATOR = m.Decorator(m.Attribute(m.Name("triton"), m.Name("jit")))
_EQUAL = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
# The added parameter goes on a line of its own: the kernel's parameter line stays within the line length.
_COMMA = cst.Comma(
    whitespace_after=cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), indent=True, last_line=cst.SimpleWhitespace("    ")
    )
)

Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def jit_functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """The module's `@triton.jit` functions by name."""
    return {
        s.name.value: s
        for s in module.body
        if isinstance(s, cst.FunctionDef) and any(m.matches(d, JIT_DECORATOR) for d in s.decorators)
    }


def called(node: cst.CSTNode) -> list[str]:
    """Names of the functions `node` calls by name."""
    calls = [cst.ensure_type(c, cst.Call) for c in m.findall(node, m.Call(func=m.Name()))]
    return [cst.ensure_type(c.func, cst.Name).value for c in calls]


def names(node: cst.CSTNode) -> set[str]:
    return {cst.ensure_type(n, cst.Name).value for n in m.findall(node, m.Name())}


def identifiers(node: cst.CSTNode) -> set[str]:
    """The names `node` binds or reads: not a call's keywords (`num_warps=`) nor attributes (`x.shape`)."""
    skipped = {id(cst.ensure_type(a, cst.Arg).keyword) for a in m.findall(node, m.Arg(keyword=m.Name()))}
    skipped |= {id(cst.ensure_type(a, cst.Attribute).attr) for a in m.findall(node, m.Attribute())}
    found = m.findall(node, m.Name())
    return {cst.ensure_type(n, cst.Name).value for n in found if id(n) not in skipped}


def code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def body_key(function: cst.FunctionDef) -> str:
    """The function's code but for its name: equal for one code under two names. Comments above the def
    (Inductor's "Fused by Inductor from ...") are not its code."""
    return code(function.with_changes(name=cst.Name("_kernel"), leading_lines=()))


def is_docstring(statement: cst.CSTNode) -> bool:
    """A statement that is a string literal alone: the docstring when it comes first in a body."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


class Renamed(cst.CSTTransformer):
    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.renames.get(updated_node.value)
        return updated_node if new is None else updated_node.with_changes(value=new)


class RenamedReads(cst.CSTTransformer):
    """Renames the names code binds or reads (`identifiers`), never a call's keywords (`ROWS=`) nor an
    attribute (`x.shape`): a module constant renamed where it is read, not where a keyword spells it."""

    def __init__(self, renames: dict[str, str]) -> None:
        super().__init__()
        self.renames = renames
        self._spelled: set[int] = set()  # keyword and attribute names seen on the way down

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._spelled.add(id(node.keyword))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._spelled.add(id(node.attr))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.renames.get(updated_node.value)
        if new is None or id(original_node) in self._spelled:
            return updated_node
        return updated_node.with_changes(value=new)


def one_kernel(
    module: cst.Module,
    launches: dict[str, str],
    param: str,
    body: Callable[[cst.FunctionDef], cst.BaseSuite],
) -> tuple[cst.Module, str]:
    """`module` with the kernels named in `launches` (kernel -> the code of its value of `param`) replaced,
    where the earliest of them stood, by one kernel: the first's parameters and `param: tl.constexpr`, and
    the body `body` writes from the first; each launch of one of them launches it with its value. The name is
    the first's without its size suffix where that is free. Also returns that name."""
    first = next(iter(launches))
    kernel = jit_functions(module)[first]
    base = ROUTE_SUFFIX.sub("", first)
    name = base if base == first or base not in names(module) else first
    # The new parameter takes the last one's place in the layout (its comma, a line break before `)`).
    *head, last = kernel.params.params
    added = cst.Param(
        cst.Name(param),
        annotation=cst.Annotation(cst.parse_expression("tl.constexpr")),
        comma=last.comma,
        whitespace_after_param=last.whitespace_after_param,
    )
    last = last.with_changes(comma=_COMMA, whitespace_after_param=cst.SimpleWhitespace(""))
    params = kernel.params.with_changes(params=[*head, last, added])
    merged = kernel.with_changes(name=cst.Name(name), params=params, body=body(kernel))
    out: list[Statement] = []
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value in launches:
            if merged not in out:
                out.append(merged)
            continue
        out.append(statement)
    return module.with_changes(body=out).visit(_Launches(launches, name, param)), name


class _Launches(cst.CSTTransformer):
    """`kernel_small[grid](...)` -> `kernel[grid](..., PARAM=value)` (before `num_warps`)."""

    def __init__(self, launches: dict[str, str], name: str, param: str) -> None:
        self.launches = launches
        self.name = name
        self.param = param

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = updated_node.func
        if not (isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name)):
            return updated_node
        value = self.launches.get(func.value.value)
        if value is None:
            return updated_node
        arg = cst.Arg(cst.parse_expression(value), keyword=cst.Name(self.param), equal=_EQUAL)
        args = list(updated_node.args)
        at = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == "num_warps"), len(args))
        args.insert(at, arg)
        return updated_node.with_changes(func=func.with_changes(value=cst.Name(self.name)), args=args)
