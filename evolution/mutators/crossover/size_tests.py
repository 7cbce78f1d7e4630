"""Size tests and launch tables of a flat module: where a crossover's routing chose the code or the launch
constants by the bytes of the tensor arguments, the statements that count those bytes (`nbytes = sum(...)`),
test them per interval of sizes (`if nbytes <= 1397973:`) and set each varying constant in a local there
(`warps_scale = 0.5`), the local read where the constant was. crossover.routes decides what runs where;
this module writes the tests. Source text only, never run.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import libcst as cst

from evolution.mutators.crossover.alike import RenamedReads, is_docstring
from evolution.mutators.crossover.source import ParsedCode, byte_count
from evolution.mutators.crossover.tree import Group

# Every crossover suffix a name gathered: a child crossed again suffixes its parent's `_large` anew.
SIDE_SUFFIX = re.compile(r"(?:_(?:small|large)\d*)+$")
_TABLE_COMMENT = "# Launch constants by input size (bytes of the tensor arguments), as the search timed them."

_T = TypeVar("_T")
Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement
Table = list[tuple[int, int | None, tuple[tuple[str, str], ...]]]  # (low, high, (constant, value)...)


@dataclass(frozen=True)
class Counted:
    """The arguments a flat module counts the input bytes over (a tuple's text); `only_tensors` when a guard
    lets nothing but tensors through them (one sum, no test of each); `lone`, the one tensor such a guard
    lets through where there is one (its own bytes, as an engine writes them: no sum at all)."""

    tensors: str
    only_tensors: bool = False
    lone: str = ""

    def lines(self, total: str, item: str) -> list[str]:
        if self.lone:
            return [f"    {total} = {self.lone}.numel() * {self.lone}.element_size()"]
        return byte_count(total, item, self.tensors, only_tensors=self.only_tensors)


def launch_locals(
    statements: Sequence[Statement],
    group: Group,
    mapping: dict[str, str],
    total: str,
    taken: set[str],
) -> list[Statement]:
    """A code's own statements in the one entry, its launch table in front: a local per constant it varies
    in (`warps_scale = 1.0` above some size), read where its host read the keyword-only parameter. Only
    inputs of this code's intervals reach them, so a test tells its intervals apart and nothing else."""
    table = launch_table_of(group, mapping)
    locals_ = local_names(table, taken)
    preamble = list(cst.parse_module("\n".join(table_lines(locals_, table, total)) + "\n").body)
    renamed = cst.Module(list(statements)).visit(RenamedReads(locals_)).body
    return [*preamble, *renamed]


def launch_table_of(group: Group, mapping: dict[str, str]) -> Table:
    """The constants (renamed by `mapping`) each of a code's leaves launches with, by interval of input
    bytes, neighbours launching alike joined."""
    runs = [
        (leaf.high, tuple(sorted((mapping.get(c, c), v) for c, v in values.items())))
        for leaf, values in zip(group.leaves, group.calls, strict=True)
    ]
    return intervals(runs)


def local_names(table: Table, taken: set[str]) -> dict[str, str]:
    """Constant -> the local a launch table sets it in: its name in lower case, without a route suffix
    (`warps_scale`), never one `taken` (which it joins)."""
    names: dict[str, str] = {}
    for constant in sorted({c for _, _, values in table for c, _ in values}):
        name = SIDE_SUFFIX.sub("", constant).lower() or constant.lower()
        while name in taken:
            name += "_"
        taken.add(name)
        names[constant] = name
    return names


def table_lines(names: dict[str, str], table: Table, total: str) -> list[str]:
    """A launch table as statements: each local at the value most intervals take, then a test per interval
    that takes others, setting those."""
    fallback = dict(untested([values for _, _, values in table]))
    lines = [f"{local} = {fallback.get(c, c)}" for c, local in names.items()]
    for low, high, values in table:
        chosen = dict(values)
        if chosen != fallback:
            lines.append(f"if {size_test(low, high, total)}:")
            lines += [
                f"    {names[c]} = {chosen.get(c, c)}"
                for c in names
                if chosen.get(c, c) != fallback.get(c, c)
            ]
    return lines


def counter_names(taken: set[str]) -> tuple[str, str]:
    """The byte counter's total and loop variable: `nbytes` and `arg` unless the code already uses them."""
    return ("nbytes", "arg") if not taken & {"nbytes", "arg"} else ("nbytes_", "arg_")


def intervals(runs: list[tuple[int | None, _T]]) -> list[tuple[int, int | None, _T]]:
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


def untested(runs: list[_T]) -> _T:
    """What most intervals run, on a tie the module's own constants (an empty set of them), then the largest
    inputs': the case no test is written for."""
    return max(runs, key=lambda r: (runs.count(r), r == (), runs.index(r) == len(runs) - 1))


def size_test(low: int, high: int | None, total: str) -> str:
    if low < 0:
        return f"{total} <= {high}"
    if high is None:
        return f"{total} > {low}"
    return f"{low} < {total} <= {high}"


class SizeTable(RenamedReads):
    """The single code's host with its launch table inside: the bytes of its tensor arguments counted, each
    constant that varies read from a local the table sets (`warps_scale = 0.5` on its interval) and passed
    on to the helpers that take it."""

    def __init__(self, host: str, table: Table, counted: Counted):
        super().__init__({})  # the constants' locals, once the host is reached
        self.host = host
        self.table = table
        self.counted = counted
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1
        if self.depth == 1 and node.name.value == self.host:
            taken = ParsedCode.parse(cst.Module([node]).code, "the host").names
            self.renames = local_names(self.table, taken)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.depth -= 1
        if self.depth or original_node.name.value != self.host:
            return updated_node
        params = {p.name.value for p in [*original_node.params.params, *original_node.params.kwonly_params]}
        total, item = counter_names(params)
        lines = self.counted.lines(total, item)
        lines += [f"    {line}" for line in table_lines(self.renames, self.table, total)]
        preamble = list(cst.parse_module(textwrap.dedent("\n".join(lines))).body)
        self.renames = {}
        body = list(updated_node.body.body)
        at = 1 if body and isinstance(body[0], cst.BaseStatement) and is_docstring(body[0]) else 0
        comment = cst.EmptyLine(comment=cst.Comment(_TABLE_COMMENT))
        preamble[0] = preamble[0].with_changes(leading_lines=[comment])
        return updated_node.with_changes(
            body=updated_node.body.with_changes(body=[*body[:at], *preamble, *body[at:]])
        )
