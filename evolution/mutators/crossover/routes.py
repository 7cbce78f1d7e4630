"""Flatten the size routing that bucket crossovers stack up: one table, no unreachable code, no twin copies.

A crossover of crossovers routes through several size dispatchers (crossover.source) to its leaves, each
running on one interval of input bytes (crossover.tree reads them). A search's winner can hold four levels
of it, with code no input reaches (an inner branch beyond an outer threshold) and several copies of one
kernel that differ only in a launch constant, suffixed `_small`, `_large2`... A reviewer reads all of it.

`flat_routes` rewrites such a block so that it routes every input to the same code with the same constants,
and holds:
- only the code some interval reaches;
- one copy of code that is the same up to the names of its module-level definitions and the values of
  constants only host (undecorated) functions read;
- where one code is left, no dispatcher: the entry is that code's host, which counts the bytes itself and
  sets each varying constant for its interval (`warps_scale = 0.5`), passed to the helpers that read it;
- where several are and their hosts differ only between a shared head and tail (a norm's: outputs
  allocated alike, one kernel launched or another), no dispatcher either: the entry holds the head, a size
  test around each code's own statements and the tail, a code's varying constants set by size in its
  branch;
- else one dispatcher, one test per interval (what most intervals run last, untested), each code taking
  the constants it varies in as keyword-only parameters (crossover.source's launch table);
- the crossover suffixes dropped from names where one copy remains, and each copy of several named for
  when it runs (`_small`, `_medium`, `_large`); a comment that named a dropped copy names the one that
  ships (crossover.twin_comments);
- each code's host taking only the parameters its code reads (the entry keeps the engine's signature).
One crossover of two codes is written the same way: one test with its threshold inline, without the
search's account of the split. Nothing here runs candidate code; a block whose routing is not the
dispatchers crossover.source writes is left as it is (None).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from evolution.mutators.crossover.alike import names
from evolution.mutators.crossover.host_helpers import host_helpers_merged, threaded_constants_as_parameters
from evolution.mutators.crossover.index_width import index_widths_merged
from evolution.mutators.crossover.kernel_notes import kernels_noted
from evolution.mutators.crossover.launch_choice import launch_choices
from evolution.mutators.crossover.size_tests import (
    SIDE_SUFFIX,
    Counted,
    SizeTable,
    Statement,
    counter_names,
    intervals,
    launch_locals,
    launch_table_of,
    size_test,
    untested,
)
from evolution.mutators.crossover.source import (
    SECTION,
    CrossoverError,
    LaunchTable,
    ParsedCode,
    ThreadConstants,
    def_line,
    launch_table,
    literal,
)
from evolution.mutators.crossover.table_expressions import table_expressions
from evolution.mutators.crossover.topk_method import topk_methods_merged
from evolution.mutators.crossover.tree import Group, RoutingError, read_routing
from evolution.mutators.crossover.twin_comments import comments_renamed, twin_names
from evolution.writers.fusion.code_text import wrap_long_lines
from evolution.writers.fusion.generate import LINE_LENGTH

_CODES = """# Each call runs the code, launched with the constants, that the search timed fastest on inputs of
# its size: the bytes of its tensor arguments."""


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
    its routing is flat already, or it is not the routing crossover.source writes. `tensors`: the only
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

    kept: dict[str, set[int]] = {}  # name -> the groups whose code reads it
    for k, group in enumerate(groups):
        for name in group.order:
            kept.setdefault(name, set()).add(k)
    chunks = [
        SECTION.sub("", chunk)
        for node, chunk in _statement_chunks(tree.text)
        if not (_bound_names(node) and not (_bound_names(node) & set(kept)))
    ]
    kept_text = re.sub(r"\n{3,}(?=\S)", "\n\n\n", "".join(chunks)).strip() + "\n"
    mapping = _readable_names(groups, kept, entry, ParsedCode.parse(kept_text, "the block").names)
    code = ParsedCode.parse(kept_text, "the block").renamed({k: v for k, v in mapping.items() if k != v})
    # What the copies shared was kept from the first parent: its comments may name a copy that goes.
    code = comments_renamed(code, twin_names(groups, set(kept), mapping))
    code = _launch_tables(code, groups, mapping, constants)

    counted = (
        Counted(ast.unparse(tree.tensors))
        if tensors is None
        else Counted(
            f"({', '.join(tensors)}{',' * (len(tensors) == 1)})",
            only_tensors=True,
            lone=tensors[0] if len(tensors) == 1 else "",
        )
    )
    if len(groups) == 1:
        code = _one_code(code, groups[0], mapping, counted)
    else:
        hosts = [mapping.get(g.order[0], g.order[0]) for g in groups]
        merged = _one_host(code, block, entry, groups, hosts, counted, mapping)
        if merged is not None:
            code = merged
        else:
            code, signatures = _unread_params_dropped(code, hosts)
            dispatcher = _dispatcher(block, entry, groups, mapping, tree.params, counted, signatures)
            code = code.rstrip() + "\n" + dispatcher
        code = launch_choices(host_helpers_merged(index_widths_merged(topk_methods_merged(code))))
        code = kernels_noted(code, block, mapping)
    code = table_expressions(threaded_constants_as_parameters(code.rstrip() + "\n"))
    return wrap_long_lines(_orphan_route_notes_dropped(code), LINE_LENGTH)


_ROUTE_CONSTANT = re.compile(r"\bCROSSOVER_BYTES\d*\b")


def _orphan_route_notes_dropped(code: str) -> str:
    """`code` without the module-level comment blocks that explain a threshold constant the flattening
    removed (`# Bucket crossover: calls whose tensor arguments total at most CROSSOVER_BYTES2 bytes ...`):
    its test is now a literal in the one dispatcher, which says why each size runs what it runs. Kept, a
    search of SGLang's RMSNorm shipped four such accounts, 18 lines, above its dispatcher, naming constants
    no longer in the module."""
    bound = set(re.findall(r"^(CROSSOVER_BYTES\d*)\s*=", code, re.MULTILINE))
    lines = code.splitlines(keepends=True)
    kept: list[str] = []
    k = 0
    while k < len(lines):
        if not lines[k].startswith("#"):
            kept.append(lines[k])
            k += 1
            continue
        end = k
        while end < len(lines) and lines[end].startswith("#"):
            end += 1
        run = lines[k:end]
        named = set(_ROUTE_CONSTANT.findall("".join(run)))
        if named and not named & bound:
            while end < len(lines) and not lines[end].strip():
                end += 1  # the blank lines that set the block apart go with it
        else:
            kept.extend(run)
        k = end
    return "".join(kept)


def _one_host(
    code: str,
    block: str,
    entry: str,
    groups: list[Group],
    hosts: list[str],
    counted: Counted,
    mapping: dict[str, str],
) -> str | None:
    """Codes whose hosts differ only in some statements between a shared head and tail (a norm's: the
    outputs allocated alike, one kernel launched or the other) as one entry: the head, the size test
    around each code's own statements, the tail; the hosts gone. A code that launches with constants of
    its own on some sizes (a launch table) reads them from locals its branch sets by size. None when a
    host is called with anything but the entry's own parameters and its launch constants, a shared
    statement reads a launch constant, or nothing is shared."""
    varied = [{mapping.get(c, c) for values in group.calls for c in values} for group in groups]
    module = cst.parse_module(code)
    defs = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value in hosts}
    if len(defs) != len(hosts) or not all(_named_once(code, h) for h in hosts):
        return None
    if any(d.decorators or d.asynchronous for d in defs.values()):  # what a decorator adds would be lost
        return None
    if not all(
        _passes_through(leaf.call, defs[host], varied[k], mapping)
        for k, (host, g) in enumerate(zip(hosts, groups, strict=True))
        for leaf in g.leaves
    ):
        return None
    found = [_statements(defs[h]) for h in hosts]
    bodies = [statements for statements in found if statements is not None]
    if len(bodies) != len(hosts):
        return None
    texts = [[cst.Module([statement]).code for statement in statements] for statements in bodies]
    head = 0
    while all(head < len(t) and t[head] == texts[0][head] for t in texts):
        head += 1
    tail = 0
    while all(tail < len(t) - head and t[-1 - tail] == texts[0][-1 - tail] for t in texts):
        tail += 1
    if head + tail == 0:
        return None
    shared = cst.Module([*bodies[0][:head], *bodies[0][len(bodies[0]) - tail :]])
    if names(shared) & set().union(*varied):  # it would read the module's value on every size
        return None
    used = set().union(*(names(h) for h in defs.values()))
    total, item = counter_names(used)
    taken = used | {total, item}  # each branch names its locals apart from these, not from another branch's
    runs = intervals([(leaf.high, k) for k, group in enumerate(groups) for leaf in group.leaves])
    fallback = untested([k for _, _, k in runs])

    def own(k: int) -> cst.IndentedBlock:
        statements = bodies[k][head : len(bodies[k]) - tail]
        if varied[k]:
            statements = launch_locals(statements, groups[k], mapping, total, set(taken))
        return cst.IndentedBlock(statements or [cst.SimpleStatementLine([cst.Pass()])])

    first = {k: min(low for low, _, j in runs if j == k) for _, _, k in runs}
    tested = sorted((k for k in first if k != fallback), key=first.__getitem__)

    def lower(low: int, k: int) -> int:
        """`low`, or -1 where every smaller interval's code is tested in a branch before k's: the chain
        reaches k's test only above it."""
        below = {j for _, high, j in runs if high is not None and high <= low}
        return -1 if all(j in tested[: tested.index(k)] for j in below) else low

    branch: cst.If | cst.Else = cst.Else(own(fallback))
    for k in reversed(tested):
        test = " or ".join(size_test(lower(low, k), high, total) for low, high, j in runs if j == k)
        branch = cst.If(cst.parse_expression(test), own(k), orelse=branch)
    if not isinstance(branch, cst.If):  # every interval runs one code: nothing to test
        return None
    count = cst.parse_module(textwrap.dedent("\n".join(counted.lines(total, item)))).body
    body = [*bodies[0][:head], *count, branch, *bodies[0][len(bodies[0]) - tail :]]
    stub = cst.parse_module(_entry_head(block, entry) + "\n    pass\n").body[0]
    assert isinstance(stub, cst.FunctionDef)
    function = stub.with_changes(body=cst.IndentedBlock(body))
    kept = [s for s in module.body if not (isinstance(s, cst.FunctionDef) and s.name.value in hosts)]
    # with_changes, not a new Module: the comments above the block's first statement (the first code's
    # launch comment) are the parsed module's header, not that statement's leading lines.
    above = module.with_changes(body=kept).code.rstrip()
    return above + "\n\n\n" + _CODES + "\n" + cst.Module([function]).code


def _statements(function: cst.FunctionDef) -> list[Statement] | None:
    """A function's body, statement by statement (None for a body on the `def` line)."""
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    return [s for s in body.body if isinstance(s, (cst.SimpleStatementLine, cst.BaseCompoundStatement))]


def _passes_through(call: ast.Call, host: cst.FunctionDef, launch: set[str], mapping: dict[str, str]) -> bool:
    """The dispatcher's call passes every parameter of the host the entry's parameter of the same name,
    but for the `launch` constants (the host's launch table; the call names them before renaming)."""
    params = host.params
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:  # *args, **kwargs
        return False
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    every = {*positional, *(p.name.value for p in params.kwonly_params)} - launch
    if len(call.args) > len(positional):
        return False
    passed: list[tuple[str | None, ast.expr]] = [(n, a) for a, n in zip(call.args, positional, strict=False)]
    passed += [(k.arg, k.value) for k in call.keywords if mapping.get(k.arg or "", k.arg) not in launch]
    return {name for name, _ in passed} == every and all(
        isinstance(value, ast.Name) and value.id == name for name, value in passed
    )


def _launch_tables(code: str, groups: list[Group], mapping: dict[str, str], constants: dict[str, str]) -> str:
    """Each code that runs with other constants on some interval takes them as keyword-only parameters
    (crossover.source's launch table), only its own functions: another code reading the same constant runs
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


def _one_code(code: str, group: Group, mapping: dict[str, str], counted: Counted) -> str:
    """One code left: its host is the entry, and picks the constants of each interval itself."""
    table = launch_table_of(group, mapping)
    if len(table) == 1 and not table[0][2]:
        return code
    host = mapping.get(group.order[0], group.order[0])
    return cst.parse_module(code).visit(SizeTable(host, table, counted)).code


def _dispatcher(
    block: str,
    entry: str,
    groups: list[Group],
    mapping: dict[str, str],
    params: set[str],
    counted: Counted,
    signatures: dict[str, _Signature],
) -> str:
    """The one dispatcher of several codes: per interval, in increasing size, the code it runs and the
    constants it launches with; what most intervals run last, untested."""
    calls: list[tuple[int | None, str]] = []
    for group in groups:
        host = ast.Name(mapping.get(group.order[0], group.order[0]), ast.Load())
        signature = signatures.get(host.id, _Signature((), frozenset()))
        for leaf, values in zip(group.leaves, group.calls, strict=True):
            args, passed = signature.call_arguments(leaf.call)
            passed = [kw for kw in passed if not (kw.arg and literal(kw.value))]
            varied = [
                ast.keyword(mapping.get(c, c), ast.parse(v, mode="eval").body) for c, v in values.items()
            ]
            calls.append((leaf.high, ast.unparse(ast.Call(host, args, passed + varied))))
    merged = intervals(calls)
    fallback = untested([what for _, _, what in merged])
    total, item = counter_names(params)
    tests = []
    returned = True  # every smaller input has returned above: a test needs no lower end
    for low, high, what in merged:
        if what != fallback:
            tests += [f"    if {size_test(-1 if returned else low, high, total)}:", f"        return {what}"]
        returned = returned and what != fallback
    lines = [
        "",
        "",
        *_CODES.splitlines(),
        _entry_head(block, entry),
        *counted.lines(total, item),
        *tests,
        f"    return {fallback}",
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _Signature:
    """A host's positional parameters as the crossover called it, and those dropped as unread."""

    positional: tuple[str, ...]
    dropped: frozenset[str]

    def call_arguments(self, call: ast.Call) -> tuple[list[ast.expr], list[ast.keyword]]:
        """The call's arguments without the dropped parameters': positional ones stay positional up to the
        first dropped, the rest go by name. A call with more arguments than parameters is left as it is."""
        if len(call.args) > len(self.positional):
            return list(call.args), list(call.keywords)
        args: list[ast.expr] = []
        named: list[ast.keyword] = []
        by_name = False  # once a positional argument is dropped, the ones after it go by name
        for name, value in zip(self.positional, call.args, strict=False):
            if name in self.dropped:
                by_name = True
            elif by_name:
                named.append(ast.keyword(name, value))
            else:
                args.append(value)
        return args, named + [kw for kw in call.keywords if kw.arg not in self.dropped]


def _unread_params_dropped(code: str, hosts: list[str]) -> tuple[str, dict[str, _Signature]]:
    """Each code's host without the parameters its body never reads: the dispatcher keeps the engine's
    signature, the hosts take what their code needs (a norm's two hosts need x, residual, weight and eps of
    the eleven). A host called anywhere but the dispatcher, or taking *args or **kwargs, keeps them all."""
    tree = ast.parse(code)
    signatures: dict[str, _Signature] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name not in hosts:
            continue
        params = node.args
        if params.vararg or params.kwarg or not _named_once(code, node.name):
            continue
        read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        every = [a.arg for a in (*params.posonlyargs, *params.args, *params.kwonlyargs)]
        dropped = frozenset(a for a in every if a not in read)
        if dropped:
            positional = tuple(a.arg for a in (*params.posonlyargs, *params.args))
            signatures[node.name] = _Signature(positional, dropped)
    if signatures:
        code = cst.parse_module(code).visit(_DropParams(signatures)).code
    return code, signatures


class _DropParams(cst.CSTTransformer):
    """Top-level functions without the named parameters (their defaults with them)."""

    def __init__(self, signatures: dict[str, _Signature]) -> None:
        self.signatures = signatures

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # top level only: nested functions keep their parameters

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        signature = self.signatures.get(updated_node.name.value)
        if signature is None:
            return updated_node
        params = updated_node.params

        def kept(group: Sequence[cst.Param]) -> list[cst.Param]:
            return [p for p in group if p.name.value not in signature.dropped]

        posonly, plain, kwonly = kept(params.posonly_params), kept(params.params), kept(params.kwonly_params)
        star = params.star_arg if kwonly else cst.MaybeSentinel.DEFAULT
        every = [*posonly, *plain, *kwonly]
        for group in (posonly, plain, kwonly):  # no comma left dangling after the last parameter
            if every and group and group[-1] is every[-1]:
                group[-1] = group[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        params = params.with_changes(
            posonly_params=posonly,
            posonly_ind=params.posonly_ind if posonly else cst.MaybeSentinel.DEFAULT,
            params=plain,
            kwonly_params=kwonly,
            star_arg=star,
        )
        return updated_node.with_changes(params=params)


def _named_once(code: str, name: str) -> bool:
    """`name` occurs once in `code`: a host's own `def`, called by nothing but the dispatcher."""
    return len(re.findall(rf"\b{name}\b", code)) == 1


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
        name: hosts.get(name) or SIDE_SUFFIX.sub("", name) + (suffixes[min(users)] if len(users) == 1 else "")
        for name, users in kept.items()
    }
    # Never a name something else in the code uses, nor one two kept names would share (the renaming is
    # simultaneous, so a kept name may take another's old name): one that cannot be renamed stays as it is,
    # which may in turn keep another from taking it.
    outside = identifiers - set(kept) - {entry}
    mapping = dict(wanted)
    while clashes := [
        name
        for name, new in mapping.items()
        if new != name and (new in outside or list(mapping.values()).count(new) > 1)
    ]:
        for name in clashes:
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
