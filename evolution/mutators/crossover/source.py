"""Write a bucket-crossover child: parent A's file whose EVOLVE-BLOCK routes each call by the bytes of its
tensor arguments.

Two candidates that differ only in module constants their host code reads (a knob variant's WARPS_SCALE,
a tuned BLOCK) become one copy of the code and a launch table: the functions that read a constant take it
as a keyword-only parameter (the module's value by default), and the entry launches with B's values on B's
side of the threshold. Otherwise (their kernels differ) the block holds A's code, entry renamed, and B's
code with every name its block defines suffixed for when it runs (`_small` / `_large`), what both define
alike once, and a dispatcher under the entry's name.

Renaming is scope-aware (libcst ScopeProvider): only module-level bindings and the references that resolve to
them change, so a kernel parameter that shadows a module constant (`BLOCK_SIZE`) keeps its name. Imports are
never renamed: B's imports that A's file lacks are added where B's code starts, and an import that would
rebind one of A's names is refused rather than guessed around. Nothing here runs candidate code.
"""

from __future__ import annotations

import ast
import itertools
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, GlobalScope, MetadataWrapper, ScopeProvider

from evaluators.candidate import find_evolve_block, replace_evolve_block
from evaluators.errors import CandidateError
from evolution.writers.fusion.code_text import wrap_long_lines
from evolution.writers.fusion.generate import LINE_LENGTH

_CODE = cst.Module([])
# Where candidate B's code starts in a child's block (each crossover of a crossover adds one more).
SECTION_HEADER = "# --- bucket crossover: candidate B's code, its module-level names suffixed ---"
SECTION = re.compile(r"^# --- bucket crossover: .*\n", re.MULTILINE)
_EQUAL = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


class CrossoverError(Exception):
    """Why two candidates cannot be combined (one sentence, shown as the mutation's error)."""


@dataclass(frozen=True)
class Route:
    threshold: int  # bytes of tensor arguments
    b_small: bool  # True: B runs inputs of at most `threshold` bytes, A the rest; False: the reverse
    why: str  # the measurements behind the threshold, written as a comment above it


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


class _NodeRenamer(cst.CSTTransformer):
    """Gives the Name nodes picked out beforehand (by identity) their new names; touches nothing else."""

    def __init__(self, targets: dict[int, str]) -> None:
        self.targets = targets

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.targets.get(id(original_node))
        return updated_node.with_changes(value=new) if new else updated_node


@dataclass
class ParsedCode:
    """One parsed piece of code (a block or a whole file) with its module scope resolved."""

    wrapper: MetadataWrapper
    scope: GlobalScope
    names: set[str]  # every identifier appearing anywhere in it

    @classmethod
    def parse(cls, text: str, what: str) -> ParsedCode:
        try:
            wrapper = MetadataWrapper(cst.parse_module(text))
        except cst.ParserSyntaxError as exc:
            raise CrossoverError(f"{what} does not parse: {exc.message}") from exc
        scope = next(s for s in wrapper.resolve(ScopeProvider).values() if isinstance(s, GlobalScope))
        collector = _NameCollector()
        wrapper.module.visit(collector)
        return cls(wrapper, scope, collector.names)

    def defined(self) -> set[str]:
        """Names bound at module level by anything but an import (defs, classes, assignments, loops)."""
        return {
            n
            for n in self.names
            for a in self.scope.assignments[n]
            if isinstance(a, Assignment)
            and a.scope is self.scope
            and not isinstance(a.node, (cst.Import, cst.ImportFrom))
        }

    def free(self) -> set[str]:
        """Names read anywhere in this code, function bodies included, that nothing in it binds (imports from
        elsewhere, builtins): `libdevice.exp` inside a kernel needs B's libdevice import as much as a
        module-level `@triton.jit` needs triton."""
        free: set[str] = set()
        for scope in {s for s in self.wrapper.resolve(ScopeProvider).values() if s is not None}:
            for access in scope.accesses:
                if isinstance(access.node, cst.Name) and all(
                    isinstance(r, BuiltinAssignment) for r in access.referents
                ):
                    free.add(access.node.value)
        return free

    def function(self, name: str) -> cst.FunctionDef | None:
        for stmt in self.wrapper.module.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
                return stmt
        return None

    def renamed(self, mapping: dict[str, str]) -> str:
        targets: dict[int, str] = {}
        for old, new in mapping.items():
            for assignment in self.scope.assignments[old]:
                node = assignment.node if isinstance(assignment, Assignment) else None
                if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                    targets[id(node.name)] = new
                elif isinstance(node, cst.Name):
                    targets[id(node)] = new
                for ref in getattr(assignment, "references", ()):
                    if isinstance(ref.node, cst.Name):
                        targets[id(ref.node)] = new
        return self.wrapper.module.visit(_NodeRenamer(targets)).code


def import_bindings(module: cst.Module) -> dict[str, str]:
    """name -> the one-name import statement that binds it, for the module's top-level imports."""
    bound: dict[str, str] = {}
    for line in module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for stmt in line.body:
            if isinstance(stmt, cst.Import):
                for alias in stmt.names:
                    full = _CODE.code_for_node(alias.name)
                    name = alias.evaluated_alias or full.split(".")[0]
                    bound[name] = f"import {full}" + (f" as {alias.evaluated_alias}" if alias.asname else "")
            elif isinstance(stmt, cst.ImportFrom) and not isinstance(stmt.names, cst.ImportStar):
                origin = "." * len(stmt.relative) + (_CODE.code_for_node(stmt.module) if stmt.module else "")
                if origin == "__future__":  # only valid at a file's top; A's file keeps its own
                    continue
                for alias in stmt.names:
                    name = alias.evaluated_alias or alias.evaluated_name
                    as_part = f" as {alias.evaluated_alias}" if alias.asname else ""
                    bound[name] = f"from {origin} import {alias.evaluated_name}{as_part}"
    return bound


def _fresh(make: str, taken: set[str]) -> str:
    """`make` with "" then "2", "3"... in place of {} until the name is free."""
    for k in itertools.chain([""], (str(i) for i in itertools.count(2))):
        name = make.format(k)
        if name not in taken:
            return name
    raise AssertionError("unreachable")


def _suffix_for(defined: set[str], entry: str, taken: set[str], side: str) -> dict[str, str]:
    """The renaming of B's names with the first suffix naming when they run (`_small`, `_small2`, ... or
    `_large`...) that collides with nothing."""
    for k in itertools.chain([""], (str(i) for i in itertools.count(2))):
        mapping = {n: f"{n}_{side}{k}" for n in defined if n != entry}
        mapping[entry] = f"_{entry}_{side}{k}"
        new = set(mapping.values())
        if len(new) == len(mapping) and not new & taken:
            return mapping
    raise AssertionError("unreachable")


def _call_args(params: cst.Parameters) -> tuple[list[str], list[str], list[str]]:
    """(positional, keyword, tensor-candidate) argument texts that pass every parameter through unchanged.
    Inputs without a default go by position (candidates may name them differently); options with a default
    and keyword-only ones go by name, as the evaluator passes them."""
    star = params.star_arg if isinstance(params.star_arg, cst.Param) else None
    positional = [p.name.value for p in params.posonly_params]
    keyword: list[str] = []
    for p in params.params:
        (positional if star is not None or p.default is None else keyword).append(p.name.value)
    keyword += [p.name.value for p in params.kwonly_params]
    values = [*positional, *keyword]
    if star is not None:
        positional.append(f"*{star.name.value}")
        values.append(f"*{star.name.value}")
    kw_call = [f"{k}={k}" for k in keyword]
    if params.star_kwarg is not None:
        kw_call.append(f"**{params.star_kwarg.name.value}")
        values.append(f"*{params.star_kwarg.name.value}.values()")
    return positional, kw_call, values


def _accepts(params: cst.Parameters, n_positional: int, keywords: set[str]) -> bool:
    """Whether a function with `params` accepts `n_positional` arguments and `keywords` (read, not run)."""
    slots = [*params.posonly_params, *params.params]
    if n_positional > len(slots) and not isinstance(params.star_arg, cst.Param):
        return False
    by_name = {p.name.value for p in [*params.params, *params.kwonly_params]}
    if keywords - by_name and params.star_kwarg is None:
        return False
    required = [p.name.value for p in slots[n_positional:] if p.default is None]
    required += [p.name.value for p in params.kwonly_params if p.default is None]
    return all(r in keywords for r in required)


def top_level(text: str) -> dict[str, ast.stmt]:
    """name -> the top-level def, class or single-name assignment that binds it."""
    found: dict[str, ast.stmt] = {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node
    return found


def _shape(node: ast.stmt, names: Callable[[str], str]) -> str:
    """`node` as ast.dump with every Name (and a def's own name) passed through `names`, docstrings kept."""
    copy = ast.parse(ast.unparse(node)).body[0]
    for sub in ast.walk(copy):
        if isinstance(sub, ast.Name):
            sub.id = names(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
            sub.name = names(sub.name)
    return ast.dump(copy)


def shared_definitions(a_text: str, b_text: str, b_map: dict[str, str], entry: str) -> set[str]:
    """The names B's block defines exactly as A's does once B's names that are shared are read as A's:
    the child keeps one copy (a bucket child of two variants of one kernel ships one kernel body, and
    the helpers and constants they agree on once). Found to a fixpoint: a kernel is shared once the
    helpers it calls are."""
    try:
        a_defs, b_defs = top_level(a_text), top_level(b_text)
    except SyntaxError:
        return set()
    shared: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, node in b_defs.items():
            if name in shared or name == entry or name not in a_defs:
                continue

            def b_names(n: str, own: str = name) -> str:
                return n if n in shared or n == own else b_map.get(n, n)

            if _shape(node, b_names) == _shape(a_defs[name], lambda n: n):
                shared.add(name)
                changed = True
    return shared


def _without(text: str, names: set[str]) -> str:
    """`text` without its top-level definitions of `names` (decorators and the blank lines after them)."""
    if not names:
        return text
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    for node in ast.parse(text).body:
        defined = top_level(ast.unparse(node))
        if set(defined) & names:
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            drop.update(range(first - 1, node.end_lineno or node.lineno))
    kept = "".join(line for k, line in enumerate(lines) if k not in drop)
    return re.sub(r"\n{4,}", "\n\n\n", kept)


@dataclass(frozen=True)
class LaunchTable:
    """Two blocks that differ only in module constants the host code reads: B's values of those the entry
    needs, and A's block with each function that reads one (or calls one that does) taking it as a
    keyword-only parameter whose default is the module's value."""

    b_values: dict[str, str]  # constant -> B's value (source text), for those the entry reads
    needs: dict[str, list[str]]  # function -> the constants it takes


def literal(node: ast.expr) -> bool:
    """A literal int, float, bool or string, signed or not."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool, str))


def _module_reads(node: ast.stmt) -> set[str]:
    """The names a module-level statement reads, but a function's own parameters: a kernel's `ROWS:
    tl.constexpr` is its argument, not the module's `ROWS` (a fusion code of several rows names both so)."""
    reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        reads -= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    return reads


def launch_table(a_text: str, b_text: str, entry: str) -> LaunchTable | None:
    """The launch table of two blocks equal but for literal module constants read only by undecorated
    module-level functions (a kernel or a module statement reading one makes them differ in structure);
    None otherwise. Raises CrossoverError when the constants that differ reach no call of the entry."""
    try:
        a_tree, b_tree = ast.parse(a_text), ast.parse(b_text)
    except SyntaxError:
        return None
    if len(a_tree.body) != len(b_tree.body):
        return None
    differing: dict[str, str] = {}
    for x, y in zip(a_tree.body, b_tree.body, strict=True):
        if ast.dump(x) == ast.dump(y):
            continue
        if not (isinstance(x, ast.Assign) and isinstance(y, ast.Assign) and len(x.targets) == 1):
            return None
        target = x.targets[0]
        if not (isinstance(target, ast.Name) and ast.dump(target) == ast.dump(y.targets[0])):
            return None
        if not (literal(x.value) and literal(y.value)):
            return None
        differing[target.id] = ast.unparse(y.value)
    if not differing:
        return None
    plain = {n.name: n for n in a_tree.body if isinstance(n, ast.FunctionDef) and not n.decorator_list}
    for node in a_tree.body:
        if node not in plain.values() and _module_reads(node) & set(differing):
            return None  # read by a kernel or at module level: the two differ in what they compile
    needs = {
        name: {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in differing}
        for name, fn in plain.items()
    }
    calls: dict[str, set[str]] = {name: set() for name in plain}
    for name, fn in plain.items():
        if {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)} & set(differing):
            return None  # a parameter of that name already
        for call in ast.walk(fn):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in plain:
                calls[name].add(call.func.id)
    changed = True
    while changed:
        changed = False
        for name in plain:
            more = set().union(*(needs[g] for g in calls[name])) - needs[name]
            if more:
                needs[name] |= more
                changed = True
    called = {n.func for n in ast.walk(a_tree) if isinstance(n, ast.Call)}
    for read in ast.walk(a_tree):  # a function that takes constants must only ever be called by name
        if isinstance(read, ast.Name) and needs.get(read.id) and read not in called:
            return None
    if not needs.get(entry):
        raise CrossoverError(
            f"the two candidates differ only in {', '.join(sorted(differing))}, which no call of "
            f"{entry}() reads"
        )
    return LaunchTable(
        {c: differing[c] for c in sorted(needs[entry])}, {f: sorted(c) for f, c in needs.items() if c}
    )


class ThreadConstants(cst.CSTTransformer):
    """A's block with the launch table's constants taken as keyword-only parameters and passed on."""

    def __init__(self, table: LaunchTable, entry: str, launch: str) -> None:
        self.table = table
        self.entry = entry
        self.launch = launch
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.depth -= 1
        name = original_node.name.value
        taken = self.table.needs.get(name) if self.depth == 0 else None
        if not taken:
            return updated_node
        params = updated_node.params
        extra = [cst.Param(cst.Name(c), default=cst.Name(c), equal=_EQUAL) for c in taken]
        star = params.star_arg if isinstance(params.star_arg, (cst.Param, cst.ParamStar)) else cst.ParamStar()
        params = params.with_changes(star_arg=star, kwonly_params=[*params.kwonly_params, *extra])
        updated_node = updated_node.with_changes(params=params)
        if name == self.entry:
            updated_node = updated_node.with_changes(name=cst.Name(self.launch))
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = original_node.func
        taken = self.table.needs.get(func.value) if isinstance(func, cst.Name) else None
        if not taken:
            return updated_node
        extra = [cst.Arg(cst.Name(c), keyword=cst.Name(c), equal=_EQUAL) for c in taken]
        return updated_node.with_changes(args=[*updated_node.args, *extra])


def build_child(a_source: str, b_source: str, entry: str, route: Route) -> str:
    """A's file with the combined EVOLVE-BLOCK; raises CrossoverError when the two cannot be combined."""
    try:
        a_block, b_block = find_evolve_block(a_source), find_evolve_block(b_source)
    except CandidateError as exc:
        raise CrossoverError(str(exc)) from exc
    if a_block is None or b_block is None:
        raise CrossoverError("both candidates need an EVOLVE-BLOCK (the parent's is where the child goes)")
    a_file, b_file = ParsedCode.parse(a_source, "the parent"), ParsedCode.parse(b_source, "the inspiration")
    a_code, b_code = (
        ParsedCode.parse(a_block.text, "the parent's block"),
        ParsedCode.parse(b_block.text, "its block"),
    )
    a_fn, b_fn = a_code.function(entry), b_code.function(entry)
    if a_fn is None or b_fn is None:
        raise CrossoverError(
            f"the EVOLVE-BLOCK of {'the parent' if a_fn is None else 'B'} defines no {entry}()"
        )

    # What B's code needs from outside its block: imports (carried over) or nothing else.
    a_imports, b_imports = import_bindings(a_file.wrapper.module), import_bindings(b_file.wrapper.module)
    b_own_imports = import_bindings(b_code.wrapper.module)
    a_names = a_file.defined() | set(a_imports)
    foreign = (b_code.free() & b_file.defined()) - b_code.defined()
    if foreign:
        raise CrossoverError(f"B's block uses {sorted(foreign)}, defined outside its EVOLVE-BLOCK")
    added: list[str] = []
    for name in sorted((b_code.free() & set(b_imports)) | set(b_own_imports)):
        statement = b_own_imports.get(name) or b_imports[name]
        if a_imports.get(name) == statement:
            continue
        if name in a_names:
            raise CrossoverError(f"B's `{statement}` would rebind {name!r}, which the parent defines")
        if name not in b_own_imports:
            added.append(statement)

    taken = a_file.names | b_file.names
    b_side, a_side = ("small", "large") if route.b_small else ("large", "small")
    b_map = _suffix_for(b_code.defined(), entry, taken, b_side)
    shared = shared_definitions(a_block.text, b_block.text, b_map, entry)
    b_map = {old: (old if old in shared else new) for old, new in b_map.items()}
    taken |= set(b_map.values())
    a_name = _fresh(f"_{entry}_{a_side}{{}}", taken)
    constant = _fresh("CROSSOVER_BYTES{}", taken | {a_name})
    positional, keywords, values = _call_args(a_fn.params)
    table = launch_table(a_block.text, b_block.text, entry)
    if not values:
        raise CrossoverError(f"the parent's {entry}() takes no arguments: nothing to route on")
    # *args / **kwargs pass through whatever came in: only the named part can be checked against B.
    named = [p for p in positional if not p.startswith("*")]
    if not _accepts(b_fn.params, len(named), {k.split("=")[0] for k in keywords if "=" in k}):
        raise CrossoverError(f"B's {entry}() does not accept the parent's arguments")

    needs_torch = a_imports.get("torch") != "import torch" and "import torch" not in added
    if needs_torch and "torch" in a_names:
        raise CrossoverError("the parent binds `torch` to something other than the torch module")
    local = {
        p.name.value for p in [*a_fn.params.posonly_params, *a_fn.params.params, *a_fn.params.kwonly_params]
    }
    total, item = _fresh("nbytes{}", local | taken), _fresh("arg{}", local | taken)
    call = ", ".join([*positional, *keywords])
    small, large = (b_map[entry], a_name) if route.b_small else (a_name, b_map[entry])
    # A's own `def` line (layout, annotations, defaults), without its decorators and body.
    signature = def_line(a_fn)
    tensors = ", ".join(values) + ("," if len(values) == 1 else "")
    who = "at most" if route.b_small else "more than"
    if table is not None:
        return _launch_table_child(
            a_source, a_code, table, entry, route, signature, (total, item, tensors, call)
        )
    suffix = b_map[entry].rsplit("_", 1)[1]
    summary = (
        f"Bucket crossover: calls whose tensor arguments total {who} {constant} bytes run B's code (its "
        f'names suffixed "_{suffix}" above), the others the parent\'s ({a_name}). {route.why}'
    )
    names = (total, item, tensors)
    dispatcher = _size_dispatcher(
        summary, constant, route, signature, names, f"{small}({call})", f"{large}({call})"
    )
    header = f"\n\n\n{SECTION_HEADER}\n"
    b_part = "".join(f"{s}\n" for s in [*added, *(["import torch"] if needs_torch else [])])
    b_text = _without(b_code.renamed(b_map), shared)
    block = a_code.renamed({entry: a_name}).rstrip() + header + b_part + b_text.strip()
    return replace_evolve_block(a_source, block + "\n" + dispatcher + "\n\n")


def def_line(function: cst.FunctionDef) -> str:
    """A function's own `def` line (layout, annotations, defaults), without its decorators and body."""
    stub = cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])])
    text = _CODE.code_for_node(function.with_changes(decorators=[], leading_lines=[], body=stub))
    return text.rstrip().removesuffix("pass").rstrip()


def byte_count(total: str, item: str, tensors: str, *, only_tensors: bool = False) -> list[str]:
    """The lines of a dispatcher that sum the bytes of the tensors among `tensors` (a tuple's text);
    `only_tensors`: a guard lets nothing else through them, so none is tested for being one."""
    if only_tensors:
        return [f"    {total} = sum({item}.numel() * {item}.element_size() for {item} in {tensors})"]
    return [
        f"    {total} = 0",
        f"    for {item} in {tensors}:",
        f"        if isinstance({item}, torch.Tensor):",
        f"            {total} += {item}.numel() * {item}.element_size()",
    ]


def _size_dispatcher(
    summary: str,
    constant: str,
    route: Route,
    signature: str,
    names: tuple[str, str, str],
    small: str,
    large: str,
) -> str:
    """The child's entry: the total bytes of its tensor arguments pick `small` (at most `constant`) or
    `large`, under a comment that says why."""
    total, item, tensors = names
    note = textwrap.fill(summary, 106, initial_indent="# ", subsequent_indent="# ")
    count = "\n".join(byte_count(total, item, f"({tensors})"))
    return f"""

{note}
{constant} = {route.threshold}


{signature}
{count}
    if {total} <= {constant}:
        return {small}
    return {large}
"""


def _launch_table_child(
    a_source: str,
    a_code: ParsedCode,
    table: LaunchTable,
    entry: str,
    route: Route,
    signature: str,
    names: tuple[str, str, str, str],
) -> str:
    """One copy of the code, its entry a dispatcher that launches it with B's constants on B's side of
    the threshold and the module's own on the other."""
    total, item, tensors, call = names
    taken = a_code.names | {total, item}
    launch, constant = _fresh(f"_{entry}_launch{{}}", taken), _fresh("CROSSOVER_BYTES{}", taken)
    # The constants passed on lengthen calls: broken at their brackets where they pass the line limit.
    code = wrap_long_lines(
        a_code.wrapper.module.visit(ThreadConstants(table, entry, launch)).code, LINE_LENGTH
    )
    settings = ", ".join(f"{name}={value}" for name, value in table.b_values.items())
    b_call, a_call = f"{launch}({', '.join(p for p in (call, settings) if p)})", f"{launch}({call})"
    small, large = (b_call, a_call) if route.b_small else (a_call, b_call)
    who = "at most" if route.b_small else "more than"
    summary = (
        f"Launch table by input size (bucket crossover): calls whose tensor arguments total {who} {constant} "
        f"bytes launch with {settings.replace('=', ' = ')}, the others with the module's values; both run "
        f"the same kernels. {route.why}"
    )
    dispatcher = _size_dispatcher(summary, constant, route, signature, (total, item, tensors), small, large)
    torch_import = "" if import_bindings(a_code.wrapper.module).get("torch") else "import torch\n"
    if torch_import and import_bindings(cst.parse_module(a_source)).get("torch") == "import torch":
        torch_import = ""
    return replace_evolve_block(a_source, torch_import + code.rstrip() + "\n" + dispatcher + "\n\n")
