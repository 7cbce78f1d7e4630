"""Flatten the size routing that bucket crossovers stack up: one table, no unreachable code, no twin copies.

A crossover child's entry is a size dispatcher (crossover_source): the bytes of the tensor arguments pick
`_entry_small(...)` or `_entry_large(...)`. When a parent was itself a crossover child, one of those is a
dispatcher again, and so on: read as a tree, every leaf (a host function, launched with the constants its
call passes) runs on one interval of input bytes. A search's winner can hold four levels of it, with code no
input reaches (an inner branch beyond an outer threshold) and several copies of one kernel that differ only
in a launch constant, suffixed `_small`, `_large2`... A reviewer reads all of it.

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
from dataclasses import dataclass, field
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
    top_level,
)
from evolution.writers.fusion.code_text import wrap_long_lines
from evolution.writers.fusion.generate import LINE_LENGTH

_CROSSOVER_HEADER = re.compile(r"^# --- bucket crossover: .*\n", re.MULTILINE)
_SIDE_SUFFIX = re.compile(r"_(small|large)\d*$")
_TABLE_COMMENT = "# Launch constants by input size (bytes of the tensor arguments), as the search timed them."
_CODES = """# Each call runs the code, launched with the constants, that the search timed fastest on inputs of
# its size: the bytes of its tensor arguments."""


_T = TypeVar("_T")


class _NotFlattened(Exception):
    """The block's routing is not one this module reads; it is left as it is."""


@dataclass(frozen=True)
class _Dispatch:
    bound: int  # inputs of at most this many bytes take `small`
    small: ast.Call
    large: ast.Call
    total: str  # the name of the byte count
    tensors: ast.expr  # what it sums over


@dataclass
class _Leaf:
    low: int  # exclusive; -1 for "from nothing"
    high: int | None  # inclusive; None for no bound
    function: str
    call: ast.Call  # as a dispatcher wrote it
    overrides: dict[str, str] = field(default_factory=dict)  # module constant -> value (source text)


def _constants(defs: dict[str, ast.stmt]) -> dict[str, str]:
    """Module constants bound to a literal: name -> value (source text)."""
    return {
        name: ast.unparse(node.value)
        for name, node in defs.items()
        if isinstance(node, ast.Assign) and literal(node.value)
    }


def _dispatch(node: ast.stmt | None, constants: dict[str, str]) -> _Dispatch | None:
    """The routing of a size dispatcher as crossover_source writes it (sum the tensor arguments' bytes, then
    `if total <= BOUND: return small(...)` / `return large(...)`); None for any other statement."""
    if not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return None
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    if len(body) != 4:
        return None
    start, loop, test, last = body
    if not (
        isinstance(start, ast.Assign)
        and isinstance(start.targets[0], ast.Name)
        and isinstance(loop, ast.For)
        and "element_size()" in ast.unparse(loop)
        and isinstance(test, ast.If)
        and not test.orelse
        and len(test.body) == 1
        and isinstance(test.body[0], ast.Return)
        and isinstance(test.body[0].value, ast.Call)
        and isinstance(last, ast.Return)
        and isinstance(last.value, ast.Call)
        and isinstance(test.test, ast.Compare)
        and len(test.test.ops) == 1
        and isinstance(test.test.ops[0], ast.LtE)
    ):
        return None
    total = start.targets[0].id
    left, bound = test.test.left, test.test.comparators[0]
    if not (isinstance(left, ast.Name) and left.id == total):
        return None
    if isinstance(bound, ast.Name) and bound.id in constants:
        value = ast.literal_eval(constants[bound.id])
    elif isinstance(bound, ast.Constant):
        value = bound.value
    else:
        return None
    if type(value) is not int:
        return None
    return _Dispatch(value, test.body[0].value, last.value, total, loop.iter)


def _leaves(
    call: ast.Call,
    low: int,
    high: int | None,
    defs: dict[str, ast.stmt],
    dispatchers: dict[str, _Dispatch],
    out: list[_Leaf],
) -> None:
    """The leaves `call` reaches for inputs of (low, high] bytes, in increasing size, into `out`."""
    if not isinstance(call.func, ast.Name) or call.func.id not in defs:
        raise _NotFlattened("a route calls something other than a function of the block")
    name = call.func.id
    overrides = {kw.arg: ast.unparse(kw.value) for kw in call.keywords if kw.arg and literal(kw.value)}
    for kw in call.keywords:
        passed_on = isinstance(kw.value, ast.Name) and kw.value.id == kw.arg
        if kw.arg is None or not (passed_on or kw.arg in overrides):
            raise _NotFlattened("a route passes something other than its arguments and literal constants")
    if name in dispatchers:
        if overrides:
            raise _NotFlattened("a dispatcher is called with constants")
        route = dispatchers[name]
        small_high = route.bound if high is None else min(high, route.bound)
        if small_high > low:
            _leaves(route.small, low, small_high, defs, dispatchers, out)
        large_low = max(low, route.bound)
        if high is None or high > large_low:
            _leaves(route.large, large_low, high, defs, dispatchers, out)
        return
    function = defs[name]
    assert isinstance(function, (ast.FunctionDef, ast.ClassDef, ast.Assign))
    defaults = _threaded(function) if isinstance(function, ast.FunctionDef) else {}
    constants: dict[str, str] = {}
    for param, value in overrides.items():
        if param not in defaults:
            raise _NotFlattened(f"{name}() is passed {param}, not a constant it takes")
        constants[defaults[param]] = value
    out.append(_Leaf(low, high, name, call, constants))


def _threaded(function: ast.FunctionDef) -> dict[str, str]:
    """The keyword-only parameters a launch table added to `function` (crossover_source.ThreadConstants),
    named as the constant they default to before it took a crossover suffix: param -> constant."""
    if function.decorator_list:
        return {}
    found: dict[str, str] = {}
    for arg, default in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True):
        if isinstance(default, ast.Name) and (default.id == arg.arg or default.id.startswith(arg.arg + "_")):
            found[arg.arg] = default.id
    return found


class _UnThread(cst.CSTTransformer):
    """The block with the launch tables' parameters taken out again: each function reads the module constant
    its parameter defaulted to, and the calls that passed the parameter on pass nothing. Dispatchers are
    left as they are (they are rewritten, and their calls may pass other values)."""

    def __init__(self, threaded: dict[str, dict[str, str]], dispatchers: set[str]) -> None:
        self.threaded = threaded
        self.dispatchers = dispatchers
        self.current: list[str] = []
        self.keywords: set[int] = set()  # Name nodes that name an argument, not a value

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.current.append(node.name.value)
        return node.name.value not in self.dispatchers

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        name = self.current.pop()
        taken = self.threaded.get(name) if not self.current else None
        if not taken:
            return updated_node
        params = updated_node.params
        kwonly = [p for p in params.kwonly_params if p.name.value not in taken]
        star = params.star_arg
        plain = list(params.params)
        if not kwonly and isinstance(star, cst.ParamStar):
            star = cst.MaybeSentinel.DEFAULT
            if plain and not params.star_kwarg:  # no comma left dangling after the last parameter
                plain[-1] = plain[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if kwonly and not params.star_kwarg:
            kwonly[-1] = kwonly[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        params = params.with_changes(params=plain, kwonly_params=kwonly, star_arg=star)
        return updated_node.with_changes(params=params)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.keywords.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self.keywords.add(id(node.name))  # a parameter's own name: removed, or another parameter's

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        taken = self.threaded.get(self.current[0]) if self.current else None
        if taken and original_node.value in taken and id(original_node) not in self.keywords:
            return updated_node.with_changes(value=taken[original_node.value])
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        callee = original_node.func
        if not isinstance(callee, cst.Name) or callee.value not in self.threaded:
            return updated_node
        taken = self.threaded[callee.value]
        args = []
        for arg in updated_node.args:
            key = arg.keyword.value if arg.keyword is not None else None
            if key is not None and key in taken:
                value = arg.value
                if not (isinstance(value, cst.Name) and value.value == taken[key]):
                    raise _NotFlattened(f"{callee.value}() is passed {key} other than as the module's")
                continue
            args.append(arg)
        if args:  # the last argument keeps no trailing comma of a removed one
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(args=args)


def _local_names(node: ast.stmt) -> set[str]:
    """What a function binds itself (parameters, assignment targets, loop variables): a name it reads that
    is one of these is not the module's, even where the module defines one alike (`ROWS: tl.constexpr`)."""
    if not isinstance(node, ast.FunctionDef):
        return set()
    bound = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    bound |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return bound


def _module_reads(node: ast.stmt, defs: dict[str, ast.stmt]) -> list[ast.Name]:
    """The Name nodes of `node` that read a module-level definition, in ast.walk order."""
    local = _local_names(node)
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in defs and n.id not in local]


def _closure(name: str, defs: dict[str, ast.stmt]) -> list[str]:
    """`name` and the module-level definitions it reads, directly or not, in the order first read."""
    order = [name]
    for current in order:
        for read in _module_reads(defs[current], defs):
            if read.id not in order:
                order.append(read.id)
    return order


def _launch_constants(order: list[str], defs: dict[str, ast.stmt], constants: dict[str, str]) -> set[str]:
    """The literal constants of a closure that only host functions read (a kernel, a class or another
    module statement reading one compiles or means something else with another value)."""
    structural: set[str] = set()
    for name in order:
        node = defs[name]
        if isinstance(node, ast.FunctionDef) and not node.decorator_list:
            continue
        structural |= {n.id for n in _module_reads(node, defs) if n.id != name}
    return {n for n in order if n in constants and n not in structural}


def _shape(order: list[str], defs: dict[str, ast.stmt], launch: set[str]) -> str:
    """The closure's code with its module-level names numbered in order, docstrings left out and the values of
    its launch constants blanked: equal for two copies of one code, whatever their suffixes and launch."""
    numbered = {name: f"_n{k}" for k, name in enumerate(order)}
    parts = []
    for name in order:
        node = ast.parse(ast.unparse(defs[name])).body[0]
        if isinstance(node, ast.Assign) and name in launch:
            node.value = ast.Constant(None)
        for read in _module_reads(node, defs):
            read.id = numbered.get(read.id, read.id)
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                sub.name = numbered.get(sub.name, sub.name)
                if ast.get_docstring(sub) is not None:
                    sub.body = sub.body[1:] or [ast.Pass()]
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id == name:
                sub.id = numbered[name]  # the constant's own target
        parts.append(ast.dump(node))
    return "\n".join(parts)


@dataclass
class _Group:
    """Leaves that run one code: the first one's copy ships, the others launch it with their constants."""

    order: list[str]  # the shipped copy's closure
    launch: list[str]  # its launch constants, in closure order
    leaves: list[_Leaf] = field(default_factory=list)
    calls: list[dict[str, str]] = field(default_factory=list)  # per leaf: constant -> value it differs in


def _groups(leaves: list[_Leaf], defs: dict[str, ast.stmt], constants: dict[str, str]) -> list[_Group]:
    groups: dict[str, _Group] = {}
    for leaf in leaves:
        order = _closure(leaf.function, defs)
        launch = _launch_constants(order, defs, constants)
        if set(leaf.overrides) - launch:
            raise _NotFlattened(f"{leaf.function}() is launched with a constant its kernels read")
        key = _shape(order, defs, launch)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(order, [n for n in order if n in launch])
        mine = [n for n in order if n in launch]  # positionally the group's constants (one shape)
        values = {
            ours: leaf.overrides.get(n, constants[n]) for ours, n in zip(group.launch, mine, strict=True)
        }
        group.leaves.append(leaf)
        group.calls.append({n: v for n, v in values.items() if v != constants[n]})
    return list(groups.values())


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
    except (_NotFlattened, CrossoverError, SyntaxError, cst.ParserSyntaxError):
        return None


def _flatten(block: str, entry: str, tensors: Sequence[str] | None) -> str | None:
    defs = top_level(block)
    constants = _constants(defs)
    dispatchers = {n: d for n, node in defs.items() if (d := _dispatch(node, constants)) is not None}
    entry_def = defs.get(entry)
    if entry not in dispatchers or not isinstance(entry_def, ast.FunctionDef):
        return None
    leaves: list[_Leaf] = []
    _leaves(ast.Call(ast.Name(entry, ast.Load()), [], []), -1, None, defs, dispatchers, leaves)
    params = {a.arg for a in ast.walk(entry_def.args) if isinstance(a, ast.arg)}
    for leaf in leaves:
        if not {n.id for n in ast.walk(leaf.call) if isinstance(n, ast.Name)} - {leaf.function} <= params:
            raise _NotFlattened("a route passes names the entry does not take")

    threaded = {
        name: taken
        for name, node in defs.items()
        if isinstance(node, ast.FunctionDef) and name not in dispatchers and (taken := _threaded(node))
    }
    text = cst.parse_module(block).visit(_UnThread(threaded, set(dispatchers))).code
    defs = top_level(text)
    constants = _constants(defs)
    groups = sorted(_groups(leaves, defs, constants), key=lambda g: g.leaves[0].low)
    if len(dispatchers) == 1 and len(leaves) == 2 and len(groups) == 2:
        return None  # one crossover of two codes: flat already

    kept: dict[str, set[int]] = {}  # name -> the groups whose code reads it
    for k, group in enumerate(groups):
        for name in group.order:
            kept.setdefault(name, set()).add(k)
    chunks = [
        _CROSSOVER_HEADER.sub("", chunk)
        for node, chunk in _statement_chunks(text)
        if not (_bound_names(node) and not (_bound_names(node) & set(kept)))
    ]
    kept_text = re.sub(r"\n{3,}(?=\S)", "\n\n\n", "".join(chunks)).strip() + "\n"
    mapping = _readable_names(groups, kept, entry, ParsedCode.parse(kept_text, "the block").names)
    code = ParsedCode.parse(kept_text, "the block").renamed({k: v for k, v in mapping.items() if k != v})
    code = _launch_tables(code, groups, mapping, constants)

    route = dispatchers[entry]
    counted = (
        ast.unparse(route.tensors)
        if tensors is None
        else f"({', '.join(tensors)}{',' * (len(tensors) == 1)})"
    )
    if len(groups) == 1:
        code = _one_code(code, groups[0], mapping, counted)
    else:
        code = code.rstrip() + "\n" + _dispatcher(block, entry, groups, mapping, params, counted)
    return wrap_long_lines(code.rstrip() + "\n", LINE_LENGTH)


def _launch_tables(
    code: str, groups: list[_Group], mapping: dict[str, str], constants: dict[str, str]
) -> str:
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
            raise _NotFlattened("the varied constants cannot be passed as parameters")
        mine = {mapping.get(n, n) for n in group.order} - ({host} if len(groups) == 1 else set())
        table = LaunchTable(found.b_values, {f: c for f, c in found.needs.items() if f in mine})
        code = cst.parse_module(code).visit(ThreadConstants(table, host, host)).code
    return code


def _one_code(code: str, group: _Group, mapping: dict[str, str], counted: str) -> str:
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
    block: str, entry: str, groups: list[_Group], mapping: dict[str, str], params: set[str], counted: str
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
    groups: list[_Group], kept: dict[str, set[int]], entry: str, identifiers: set[str]
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
