"""Flatten the size routing that bucket crossovers stack up: one table, no unreachable code, no twin copies.

A crossover of crossovers routes through several size dispatchers (crossover_source) to its leaves, each
running on one interval of input bytes (crossover_tree reads them). A search's winner can hold four levels
of it, with code no input reaches (an inner branch beyond an outer threshold) and several copies of one
kernel that differ only in a launch constant, suffixed `_small`, `_large2`... A reviewer reads all of it.

`flat_routes` rewrites such a block so that it routes every input to the same code with the same constants,
and holds:
- only the code some interval reaches;
- one copy of code that is the same up to the names of its module-level definitions and the values of
  constants only host (undecorated) functions read;
- where one code is left, no dispatcher: the entry is that code's host, which counts the bytes itself and
  sets each varying constant for its interval (`warps_scale = 0.5`), passed to the helpers that read it;
- where several are, one dispatcher, one test per interval (what most intervals run last, untested), each
  code taking the constants it varies in as keyword-only parameters (crossover_source's launch table);
- the crossover suffixes dropped from names where one copy remains, and each copy of several named for
  when it runs (`_small`, `_medium`, `_large`).
Nothing here runs candidate code; a block whose routing is not the dispatchers crossover_source writes, or
that is flat already (one crossover of two codes), is left as it is (None).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from typing import TypeVar

import libcst as cst

from evolution.mutators.crossover_source import (
    CrossoverError,
    LaunchTable,
    ParsedCode,
    ThreadConstants,
    byte_count,
    def_line,
    launch_table,
    literal,
)
from evolution.mutators.crossover_tree import Group, RoutingError, read_routing
from evolution.writers.fusion.code_text import wrap_long_lines
from evolution.writers.fusion.generate import LINE_LENGTH

_CROSSOVER_HEADER = re.compile(r"^# --- bucket crossover: .*\n", re.MULTILINE)
_SIDE_SUFFIX = re.compile(r"_(small|large)\d*$")
_TABLE_COMMENT = "# Launch constants by input size (bytes of the tensor arguments), as the search timed them."
_CODES = """# Each call runs the code, launched with the constants, that the search timed fastest on inputs of
# its size: the bytes of its tensor arguments."""


_T = TypeVar("_T")


def _suffixes(count: int) -> list[str]:
    """What each of `count` codes is named for, in the order of the inputs they run on."""
    if count <= 3:
        return [[""], ["_small", "_large"], ["_small", "_medium", "_large"]][count - 1]
    return [f"_size{k + 1}" for k in range(count)]


def _statement_chunks(text: str) -> list[tuple[ast.stmt, str]]:
    """Each top-level statement with its source lines, the comments and blank lines above it included."""
    lines = text.splitlines(keepends=True)
    chunks = []
    start = 0
    for node in ast.parse(text).body:
        end = node.end_lineno or node.lineno
        chunks.append((node, "".join(lines[start:end])))
        start = end
    return chunks


def _entry_head(block: str, entry: str) -> str:
    module = cst.parse_module(block)
    return def_line(next(s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == entry))


def flat_routes(block: str, entry: str, tensors: Sequence[str] | None = None) -> str | None:
    """`block` (an EVOLVE-BLOCK) with its size routing flattened, or None when its entry is no dispatcher,
    its routing is flat already, or it is not the routing crossover_source writes. `tensors`: the only
    arguments that can be tensors (a guard lets no other kind through), the ones the size is counted over;
    None: every argument, as the crossover counted."""
    try:
        return _flatten(block, entry, tensors)
    except (RoutingError, CrossoverError, SyntaxError, cst.ParserSyntaxError):
        return None


def _flatten(block: str, entry: str, tensors: Sequence[str] | None) -> str | None:
    tree = read_routing(block, entry)
    if tree is None:
        return None
    groups, constants = tree.groups, tree.constants
    if tree.dispatchers == 1 and len(tree.leaves) == 2 and len(groups) == 2:
        return None  # one crossover of two codes: flat already

    kept: dict[str, set[int]] = {}  # name -> the groups whose code reads it
    for k, group in enumerate(groups):
        for name in group.order:
            kept.setdefault(name, set()).add(k)
    chunks = [
        _CROSSOVER_HEADER.sub("", chunk)
        for node, chunk in _statement_chunks(tree.text)
        if not (_bound_names(node) and not (_bound_names(node) & set(kept)))
    ]
    kept_text = re.sub(r"\n{3,}(?=\S)", "\n\n\n", "".join(chunks)).strip() + "\n"
    mapping = _readable_names(groups, kept, entry, ParsedCode.parse(kept_text, "the block").names)
    code = ParsedCode.parse(kept_text, "the block").renamed({k: v for k, v in mapping.items() if k != v})
    code = _launch_tables(code, groups, mapping, constants)

    counted = (
        ast.unparse(tree.tensors) if tensors is None else f"({', '.join(tensors)}{',' * (len(tensors) == 1)})"
    )
    if len(groups) == 1:
        code = _one_code(code, groups[0], mapping, counted)
    else:
        code = code.rstrip() + "\n" + _dispatcher(block, entry, groups, mapping, tree.params, counted)
    return wrap_long_lines(code.rstrip() + "\n", LINE_LENGTH)


def _launch_tables(code: str, groups: list[Group], mapping: dict[str, str], constants: dict[str, str]) -> str:
    """Each code that runs with other constants on some interval takes them as keyword-only parameters
    (crossover_source's launch table), only its own functions: another code reading the same constant runs
    with its value. A single code's host reads them from its own size table (`_one_code`) instead."""
    for group in groups:
        varied = [mapping.get(c, c) for c in sorted({c for call in group.calls for c in call})]
        if not varied:
            continue
        host = mapping.get(group.order[0], group.order[0])
        other = code
        for name in varied:
            other = re.sub(
                rf"^{name} = .*$", f"{name} = {_other_value(constants, name, mapping)}", other, flags=re.M
            )
        found = launch_table(code, other, host)
        if found is None:
            raise RoutingError("the varied constants cannot be passed as parameters")
        mine = {mapping.get(n, n) for n in group.order} - ({host} if len(groups) == 1 else set())
        table = LaunchTable(found.b_values, {f: c for f, c in found.needs.items() if f in mine})
        code = cst.parse_module(code).visit(ThreadConstants(table, host, host)).code
    return code


def _one_code(code: str, group: Group, mapping: dict[str, str], counted: str) -> str:
    """One code left: its host is the entry, and picks the constants of each interval itself."""
    runs = [
        (leaf.high, tuple(sorted((mapping.get(c, c), v) for c, v in values.items())))
        for leaf, values in zip(group.leaves, group.calls, strict=True)
    ]
    table = _intervals(runs)
    if len(table) == 1 and not table[0][2]:
        return code
    host = mapping.get(group.order[0], group.order[0])
    return cst.parse_module(code).visit(_SizeTable(host, table, counted)).code


def _dispatcher(
    block: str, entry: str, groups: list[Group], mapping: dict[str, str], params: set[str], counted: str
) -> str:
    """The one dispatcher of several codes: per interval, in increasing size, the code it runs and the
    constants it launches with; what most intervals run last, untested."""
    calls: list[tuple[int | None, str]] = []
    for group in groups:
        host = ast.Name(mapping.get(group.order[0], group.order[0]), ast.Load())
        for leaf, values in zip(group.leaves, group.calls, strict=True):
            passed = [kw for kw in leaf.call.keywords if not (kw.arg and literal(kw.value))]
            varied = [
                ast.keyword(mapping.get(c, c), ast.parse(v, mode="eval").body) for c, v in values.items()
            ]
            calls.append((leaf.high, ast.unparse(ast.Call(host, leaf.call.args, passed + varied))))
    merged = _intervals(calls)
    fallback = _fallback([what for _, _, what in merged])
    total, item = ("nbytes", "arg") if not params & {"nbytes", "arg"} else ("nbytes_", "arg_")
    tests = []
    for low, high, what in merged:
        if what != fallback:
            tests += [f"    if {_test(low, high, total)}:", f"        return {what}"]
    lines = [
        "",
        "",
        *_CODES.splitlines(),
        _entry_head(block, entry),
        *byte_count(total, item, counted),
        *tests,
        f"    return {fallback}",
    ]
    return "\n".join(lines) + "\n"


def _intervals(runs: list[tuple[int | None, _T]]) -> list[tuple[int, int | None, _T]]:
    """(high, what runs) per leaf -> (low, high, what runs) in increasing size, neighbours of one joined."""
    runs = sorted(runs, key=lambda r: float("inf") if r[0] is None else r[0])
    merged: list[tuple[int, int | None, _T]] = []
    for high, what in runs:
        if merged and merged[-1][2] == what:
            merged[-1] = (merged[-1][0], high, what)
        else:
            low = merged[-1][1] if merged else -1
            assert low is not None
            merged.append((low, high, what))
    return merged


def _fallback(runs: list[_T]) -> _T:
    """What most intervals run, on a tie the module's own constants (an empty set of them), then the largest
    inputs': the case no test is written for."""
    return max(runs, key=lambda r: (runs.count(r), r == (), runs.index(r) == len(runs) - 1))


def _test(low: int, high: int | None, total: str) -> str:
    if low < 0:
        return f"{total} <= {high}"
    if high is None:
        return f"{total} > {low}"
    return f"{low} < {total} <= {high}"


class _SizeTable(cst.CSTTransformer):
    """The single code's host with its launch table inside: the bytes of its tensor arguments counted, each
    constant that varies read from a local the table sets (`warps_scale = 0.5` on its interval) and passed
    on to the helpers that take it."""

    def __init__(
        self, host: str, table: list[tuple[int, int | None, tuple[tuple[str, str], ...]]], counted: str
    ):
        self.host = host
        self.table = table
        self.counted = counted
        self.depth = 0
        self.locals: dict[str, str] = {}
        self.arg_names: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1
        if self.depth == 1 and node.name.value == self.host:
            taken = ParsedCode.parse(cst.Module([node]).code, "the host").names
            for constant in sorted({c for _, _, values in self.table for c, _ in values}):
                name = constant.lower()
                while name in taken:
                    name += "_"
                taken.add(name)
                self.locals[constant] = name

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.arg_names.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self.arg_names.add(id(node.name))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        local = self.locals.get(original_node.value) if self.locals else None
        if local is None or id(original_node) in self.arg_names:
            return updated_node
        return updated_node.with_changes(value=local)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.depth -= 1
        if self.depth or original_node.name.value != self.host:
            return updated_node
        params = {p.name.value for p in [*original_node.params.params, *original_node.params.kwonly_params]}
        total, item = ("nbytes", "arg") if not params & {"nbytes", "arg"} else ("nbytes_", "arg_")
        fallback = dict(_fallback([values for _, _, values in self.table]))
        lines = byte_count(total, item, self.counted)
        lines += [f"    {local} = {fallback.get(c, c)}" for c, local in self.locals.items()]
        for low, high, values in self.table:
            chosen = dict(values)
            if chosen != fallback:
                lines.append(f"    if {_test(low, high, total)}:")
                lines += [
                    f"        {self.locals[c]} = {chosen.get(c, c)}"
                    for c in self.locals
                    if chosen.get(c, c) != fallback.get(c, c)
                ]
        preamble = list(cst.parse_module(textwrap.dedent("\n".join(lines))).body)
        self.locals = {}
        body = list(updated_node.body.body)
        at = 1 if body and isinstance(body[0], cst.BaseStatement) and _is_docstring(body[0]) else 0
        comment = cst.EmptyLine(comment=cst.Comment(_TABLE_COMMENT))
        preamble[0] = preamble[0].with_changes(leading_lines=[comment])
        return updated_node.with_changes(
            body=updated_node.body.with_changes(body=[*body[:at], *preamble, *body[at:]])
        )


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _readable_names(
    groups: list[Group], kept: dict[str, set[int]], entry: str, identifiers: set[str]
) -> dict[str, str]:
    """Kept name -> its name in the flat block: crossover suffixes dropped, what only one of several codes
    holds named for when it runs, each code's host function for what it is (the entry itself where one code
    runs with one launch, else `_entry_launch` or `_entry_small`...). A name that would collide stays."""
    suffixes = _suffixes(len(groups))
    single = len(groups) == 1  # its host takes the entry's name (and its launch table, if any)
    hosts = {
        g.order[0]: entry if single else f"_{entry}{suffixes[k] or '_launch'}" for k, g in enumerate(groups)
    }
    wanted = {
        name: hosts.get(name)
        or _SIDE_SUFFIX.sub("", name) + (suffixes[min(users)] if len(users) == 1 else "")
        for name, users in kept.items()
    }
    # Never a name something else in the code already uses: a kept name that cannot be renamed stays as it is.
    blocked = (identifiers - set(kept)) | set(kept)
    mapping: dict[str, str] = {}
    for name in kept:
        new = wanted[name]
        if new == name or (new not in blocked - {entry} and new not in mapping.values()):
            mapping[name] = new
        else:
            mapping[name] = name
    return mapping


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    return set()


def _other_value(constants: dict[str, str], name: str, mapping: dict[str, str]) -> str:
    """A literal other than the constant's own, so that launch_table sees it vary."""
    original = next((k for k, v in mapping.items() if v == name), name)
    return "0" if constants.get(original) != "0" else "1"
