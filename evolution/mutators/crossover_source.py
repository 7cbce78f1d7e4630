"""Write a bucket-crossover child: parent A's file whose EVOLVE-BLOCK holds A's code (entry renamed), B's
code (every name its block defines suffixed, so nothing collides), and a dispatcher under the entry's name
that sends each call to B or A by the bytes of its tensor arguments.

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

_CODE = cst.Module([])


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
class _Code:
    """One parsed piece of code (a block or a whole file) with its module scope resolved."""

    wrapper: MetadataWrapper
    scope: GlobalScope
    names: set[str]  # every identifier appearing anywhere in it

    @classmethod
    def parse(cls, text: str, what: str) -> _Code:
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


def _suffix_for(defined: set[str], entry: str, taken: set[str]) -> dict[str, str]:
    """The renaming of B's names with the first suffix (_b, _b2, ...) that collides with nothing."""
    for k in itertools.chain([""], (str(i) for i in itertools.count(2))):
        mapping = {n: f"{n}_b{k}" for n in defined if n != entry}
        mapping[entry] = f"_{entry}_b{k}"
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


def _top_level(text: str) -> dict[str, ast.stmt]:
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
        a_defs, b_defs = _top_level(a_text), _top_level(b_text)
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
        defined = _top_level(ast.unparse(node))
        if set(defined) & names:
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            drop.update(range(first - 1, node.end_lineno or node.lineno))
    kept = "".join(line for k, line in enumerate(lines) if k not in drop)
    return re.sub(r"\n{4,}", "\n\n\n", kept)


def build_child(a_source: str, b_source: str, entry: str, route: Route) -> str:
    """A's file with the combined EVOLVE-BLOCK; raises CrossoverError when the two cannot be combined."""
    try:
        a_block, b_block = find_evolve_block(a_source), find_evolve_block(b_source)
    except CandidateError as exc:
        raise CrossoverError(str(exc)) from exc
    if a_block is None or b_block is None:
        raise CrossoverError("both candidates need an EVOLVE-BLOCK (the parent's is where the child goes)")
    a_file, b_file = _Code.parse(a_source, "the parent"), _Code.parse(b_source, "the inspiration")
    a_code, b_code = _Code.parse(a_block.text, "the parent's block"), _Code.parse(b_block.text, "its block")
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
    b_map = _suffix_for(b_code.defined(), entry, taken)
    shared = shared_definitions(a_block.text, b_block.text, b_map, entry)
    b_map = {old: (old if old in shared else new) for old, new in b_map.items()}
    taken |= set(b_map.values())
    a_name = _fresh(f"_{entry}_a{{}}", taken)
    constant = _fresh("CROSSOVER_BYTES{}", taken | {a_name})
    positional, keywords, values = _call_args(a_fn.params)
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
    stub = cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])])
    signature = _CODE.code_for_node(a_fn.with_changes(decorators=[], leading_lines=[], body=stub))
    signature = signature.rstrip().removesuffix("pass").rstrip()
    tensors = ", ".join(values) + ("," if len(values) == 1 else "")
    who = "at most" if route.b_small else "more than"
    suffix = b_map[entry].rsplit("_", 1)[1]
    summary = (
        f"Bucket crossover: calls whose tensor arguments total {who} {constant} bytes run B's code (its "
        f'names suffixed "_{suffix}" above), the others the parent\'s ({a_name}). {route.why}'
    )
    note = textwrap.fill(summary, 106, initial_indent="# ", subsequent_indent="# ")
    dispatcher = f"""

{note}
{constant} = {route.threshold}


{signature}
    {total} = 0
    for {item} in ({tensors}):
        if isinstance({item}, torch.Tensor):
            {total} += {item}.numel() * {item}.element_size()
    if {total} <= {constant}:
        return {small}({call})
    return {large}({call})
"""
    header = "\n\n\n# --- bucket crossover: candidate B's code, its module-level names suffixed ---\n"
    b_part = "".join(f"{s}\n" for s in [*added, *(["import torch"] if needs_torch else [])])
    b_text = _without(b_code.renamed(b_map), shared)
    block = a_code.renamed({entry: a_name}).rstrip() + header + b_part + b_text.strip()
    return replace_evolve_block(a_source, block + "\n" + dispatcher + "\n\n")
