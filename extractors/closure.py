"""Closes over everything an extracted function needs: definitions and constants of the same file and of
other modules of the repository (recursively), keeping imports of stdlib/torch/triton/numpy, and replacing
whatever cannot be had (another third-party package, an unresolvable name) by a stub that raises when
reached. Every decision lands in the report the user sees.

Work is organised in *units*: a module-level statement, or a function/method being turned into one. Each
unit is processed once: its decorators are classified, its free names gathered and resolved (which may add
more units first, so dependencies are emitted before their users), and node replacements are recorded for
the final rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import Assignment, ImportAssignment

from extractors.bindings import (
    Binding,
    RepoModule,
    RepoName,
    ThirdParty,
    Unavailable,
    from_module,
    import_aliases,
    resolve_alias,
)
from extractors.classify_decorators import ClassifyDecorators
from extractors.closure_estimate import ClosureEstimate
from extractors.errors import UnsupportedCode
from extractors.gather_free_names import GatherFreeNames
from extractors.namespace import Namespace
from extractors.parsed_module import ParsedModule
from extractors.replace_nodes import Replacement, constant, rename
from extractors.repo_index import ModuleRef, RepoIndex

MAX_UNITS = 400
DEPENDENCY_BUDGET = 40  # statements a definition used only at run time may pull in before it is stubbed
STUB_HELPER = "_kernelbot_unavailable"


class NeedsFullParse(Exception):
    """A definition whose body was blanked (slim_source) turned out to be needed: parse its module whole."""

    def __init__(self, path: object) -> None:
        super().__init__(str(path))
        self.path = path


def require_intact(target: Statements) -> None:
    for stmt in target.statements:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value in target.parsed.emptied:
            raise NeedsFullParse(target.parsed.path)


@dataclass
class Statements:
    """A repository name bound by these module-level statements (several for platform `if`/`else` defs)."""

    parsed: ParsedModule
    name: str
    statements: tuple[cst.CSTNode, ...]


Target = Statements | RepoModule | ThirdParty | Unavailable


@dataclass
class Unit:
    parsed: ParsedModule
    node: cst.CSTNode
    label: str
    replacements: dict[int, Replacement] = field(default_factory=dict)


@dataclass
class ClosureReport:
    closed_over: list[str] = field(default_factory=list)  # "module:name" of every definition copied in
    imports: list[str] = field(default_factory=list)  # import lines kept
    stubs: list[str] = field(default_factory=list)  # "name: reason"
    decorators: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class ClosureBuilder:
    def __init__(self, index: RepoIndex) -> None:
        self.index = index
        self.names = Namespace()
        self.units: list[Unit] = []  # in emission order: dependencies first
        self.imports: dict[str, ThirdParty] = {}  # emitted import line -> binding
        self.stubs: dict[str, str] = {}  # emitted stub name -> reason
        self.report = ClosureReport()
        self.estimate = ClosureEstimate(index)
        self._resolved: dict[tuple[str, str], Target] = {}
        self._included: set[int] = set()
        self._bound_by_statement: dict[str, dict[int, list[str]]] = {}

    # -- resolving one module-level name -------------------------------------------------------------------
    def resolve(self, parsed: ParsedModule, name: str, _depth: int = 0) -> Target:
        key = (str(parsed.path), name)
        if key in self._resolved:
            return self._resolved[key]
        if _depth > 30:
            return Unavailable(name, f"re-export chain of {name!r} too long (a cycle?)")
        target = self._resolve_uncached(parsed, name, _depth)
        self._resolved[key] = target
        return target

    def _resolve_uncached(self, parsed: ParsedModule, name: str, depth: int) -> Target:
        # A module's own scope holds Assignments only (builtins live in the scope above it).
        assignments = [a for a in parsed.global_scope.assignments[name] if isinstance(a, Assignment)]
        if not assignments:
            for module in reversed(self._star_sources(parsed)):
                source = self.index.parse(module)
                if source.global_scope.assignments[name] or self._star_sources(source):
                    found = self.resolve(source, name, depth + 1)
                    if not isinstance(found, Unavailable):
                        return found
            return Unavailable(name, f"{name!r} is not defined in {parsed.name}")
        statements = sorted(
            {
                id(parsed.top_level_statement(a.node)): parsed.top_level_statement(a.node)
                for a in assignments
            }.values(),
            key=parsed.line,
        )
        imports = [a for a in assignments if isinstance(a, ImportAssignment)]
        plain_imports = len(imports) == len(assignments) and all(
            parsed.parent(a.node) is parsed.top_level_statement(a.node) for a in imports
        )
        if plain_imports:
            last = max(imports, key=lambda a: parsed.line(a.node))
            binding = self._import_binding(parsed, last, name)
            if isinstance(binding, RepoName):
                return self.resolve(self.index.parse(binding.module), binding.name, depth + 1)
            return binding
        return Statements(parsed, name, tuple(statements))

    def _star_sources(self, parsed: ParsedModule) -> list[ModuleRef]:
        """Repository modules this module star-imports (`from .common import *`), in order."""
        ref = ModuleRef(parsed.name, parsed.path, parsed.is_package)
        found = []
        for stmt in parsed.module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                    module = self.index.find_module(from_module(self.index, ref, small))
                    if module is not None:
                        found.append(module)
        return found

    def _import_binding(self, parsed: ParsedModule, assignment: ImportAssignment, name: str) -> Binding:
        node = assignment.node
        assert isinstance(node, (cst.Import, cst.ImportFrom))  # what an ImportAssignment's node always is
        ref = ModuleRef(parsed.name, parsed.path, parsed.is_package)
        for alias in import_aliases(node):
            plain_dotted = isinstance(node, cst.Import) and alias.asname is None
            bound = _alias_bound(alias)
            if bound != name and not (plain_dotted and _alias_module(alias).startswith(name + ".")):
                continue
            if plain_dotted:
                repo_module = self.index.find_module(name)
                if repo_module is not None:
                    return RepoModule(repo_module)
            binding = resolve_alias(self.index, ref, node, alias)
            return binding if binding is not None else Unavailable(name, "__future__ import")
        return Unavailable(name, f"cannot find the import of {name!r} in {parsed.name}")

    # -- claiming names ------------------------------------------------------------------------------------
    def name_for(self, parsed: ParsedModule, name: str, lazy: bool = False) -> str:
        """The emitted name of a module-level name, closing over whatever it needs.

        `lazy`: the name is only used inside function bodies, so a definition too big to copy may become a
        stub (it raises only if that code path runs)."""
        target = self.resolve(parsed, name)
        if isinstance(target, Statements):
            key = ("repo", str(target.parsed.path), target.name)
            if lazy and self.names.get(key) is None:
                ref = ModuleRef(target.parsed.name, target.parsed.path, target.parsed.is_package)
                size = self.estimate.count(ref, target.name, DEPENDENCY_BUDGET)
                if size > DEPENDENCY_BUDGET:
                    return self.stub(
                        target.name,
                        (
                            f"closing over {target.parsed.name}.{target.name} would copy more than "
                            f"{DEPENDENCY_BUDGET} definitions; only reached inside a function body"
                        ),
                    )
            return self._include(target)
        if isinstance(target, ThirdParty):
            return self._import(target)
        if isinstance(target, Unavailable):
            return self.stub(target.name, target.reason)
        return self.stub(name, f"the module {target.module.name} is used as an object")

    def _include(self, target: Statements) -> str:
        parsed = target.parsed
        key = ("repo", str(parsed.path), target.name)
        existing = self.names.get(key)
        if existing is not None:
            return existing
        require_intact(target)
        for stmt in target.statements:
            for bound in self._bound_names(parsed, stmt):
                self.names.claim(("repo", str(parsed.path), bound), bound, parsed.name)
        for stmt in target.statements:
            if id(stmt) in self._included:
                continue
            self._included.add(id(stmt))
            label = f"{parsed.name}:{', '.join(self._bound_names(parsed, stmt)) or parsed.line(stmt)}"
            self.report.closed_over.append(label)
            self.process(Unit(parsed, stmt, label))
        return self.names.get(key) or target.name

    def _import(self, binding: ThirdParty) -> str:
        if binding.dotted or (binding.name is None and binding.bound == binding.module):
            key: object = ("module-root", binding.package if binding.dotted else binding.module)
        else:
            key = ("third", binding.module, binding.name)
        emitted = self.names.claim(key, binding.bound)
        if binding.dotted and emitted != binding.bound:
            raise UnsupportedCode(
                f"`import {binding.module}` clashes with another global named {binding.bound}"
            )
        line = binding.statement(emitted)
        if line not in self.imports:
            self.imports[line] = binding
            self.report.imports.append(line)
        return emitted

    def stub(self, name: str, reason: str) -> str:
        emitted = self.names.claim(("stub", name, reason), name.replace(".", "_"))
        if emitted not in self.stubs:
            self.stubs[emitted] = reason
            self.report.stubs.append(f"{name}: {reason}")
        return emitted

    def _bound_names(self, parsed: ParsedModule, stmt: cst.CSTNode) -> list[str]:
        table = self._bound_by_statement.get(str(parsed.path))
        if table is None:
            table = {}
            for assignment in parsed.global_scope.assignments:
                if not isinstance(assignment, Assignment):
                    continue
                top = parsed.top_level_statement(assignment.node)
                table.setdefault(id(top), []).append(assignment.name)
            self._bound_by_statement[str(parsed.path)] = table
        return list(dict.fromkeys(n for n in table.get(id(stmt), []) if "." not in n))

    # -- processing a unit ---------------------------------------------------------------------------------
    def process(self, unit: Unit, extra: dict[int, Replacement] | None = None) -> Unit:
        if len(self.units) >= MAX_UNITS:
            raise UnsupportedCode(
                f"the closure grew past {MAX_UNITS} definitions while adding {unit.label}; the target pulls "
                "in too much of the repository (extract a smaller function)"
            )
        parsed = unit.parsed
        plan = ClassifyDecorators.of(parsed, unit.node, lambda root: self._is_repo_name(parsed, root))
        self.report.decorators.extend(plan.notes)
        for decorator_id in plan.dropped_ids:
            unit.replacements[decorator_id] = lambda _u: cst.RemovalSentinel.REMOVE
        free = GatherFreeNames.of(parsed, unit.node, plan.dropped_ids)
        self._rename_bindings(unit)
        for name, nodes in free.globals.items():
            self._bind_references(unit, name, nodes)
        for name, nodes in free.unresolved.items():
            emitted = self.stub(name, f"{name!r} is bound nowhere ({parsed.where(nodes[0])})")
            for node in nodes:
                unit.replacements[id(node)] = rename(emitted)
        for node in free.imports:
            self._rewrite_nested_import(unit, node, free.local_imports)
        unit.replacements.update(extra or {})
        self.units.append(unit)
        return unit

    def _is_repo_name(self, parsed: ParsedModule, root: str) -> bool:
        if not parsed.global_scope.assignments[root]:
            return False
        return isinstance(self.resolve(parsed, root), (Statements, RepoModule))

    def _rename_bindings(self, unit: Unit) -> None:
        parsed = unit.parsed
        for bound in self._bound_names(parsed, unit.node):
            emitted = self.names.get(("repo", str(parsed.path), bound))
            if emitted is None or emitted == bound:
                continue
            for assignment in parsed.global_scope.assignments[bound]:
                node = assignment.node if isinstance(assignment, Assignment) else None
                if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                    unit.replacements[id(node.name)] = rename(emitted)
                elif isinstance(node, cst.Name):
                    unit.replacements[id(node)] = rename(emitted)

    def _bind_references(self, unit: Unit, name: str, nodes: list[cst.CSTNode]) -> None:
        parsed = unit.parsed
        target = self.resolve(parsed, name)
        if isinstance(target, RepoModule):
            for node in nodes:
                self._bind_module_attribute(unit, target.module, node)
            return
        lazy = all(_function_of(parsed, node) is not None for node in nodes)
        target_name = self.name_for(parsed, name, lazy)
        for node in nodes:
            if isinstance(node, cst.Name) and node.value != target_name:
                unit.replacements[id(node)] = rename(target_name)

    def _bind_module_attribute(self, unit: Unit, module: ModuleRef, node: cst.CSTNode) -> None:
        """`utils.helper(x)` where `utils` is a repository module: close over `helper`, call it by name."""
        parsed = unit.parsed
        current = node
        while True:
            parent = parsed.parent(current)
            if not (isinstance(parent, cst.Attribute) and parent.value is current):
                emitted = self.stub(parsed.code(current), f"module {module.name} used as an object")
                unit.replacements[id(current)] = constant(cst.Name(emitted))
                return
            attr = parent.attr.value
            sub = self.index.find_module(f"{module.name}.{attr}")
            if sub is None:
                lazy = _function_of(parsed, node) is not None
                emitted = self.name_for(self.index.parse(module), attr, lazy)
                unit.replacements[id(parent)] = constant(cst.Name(emitted))
                return
            module, current = sub, parent

    def _rewrite_nested_import(
        self,
        unit: Unit,
        node: cst.Import | cst.ImportFrom,
        local_refs: list[tuple[cst.CSTNode, ImportAssignment]],
    ) -> None:
        parsed = unit.parsed
        ref = ModuleRef(parsed.name, parsed.path, parsed.is_package)
        at_module_level = _function_of(parsed, node) is None
        kept: list[cst.ImportAlias] = []
        assigns: list[cst.BaseSmallStatement] = []
        for alias in import_aliases(node):
            binding = resolve_alias(self.index, ref, node, alias)
            bound = _alias_bound(alias)
            local_name = bound
            if at_module_level:
                local_name = self.names.get(("repo", str(parsed.path), bound)) or bound
            if binding is None:
                continue
            if isinstance(binding, ThirdParty):
                kept.append(alias)
                continue
            if isinstance(binding, RepoModule):
                for access_node, assignment in local_refs:
                    if assignment.node is node and assignment.name == bound:
                        self._bind_module_attribute(unit, binding.module, access_node)
                continue
            if isinstance(binding, RepoName):
                value = self.name_for(self.index.parse(binding.module), binding.name, not at_module_level)
            else:
                value = self.stub(binding.name, binding.reason)
            if value != local_name:
                assigns.append(cst.Assign([cst.AssignTarget(cst.Name(local_name))], cst.Name(value)))
        if not kept and not assigns:
            unit.replacements[id(node)] = lambda _u: cst.RemovalSentinel.REMOVE
            return
        new_nodes: list[cst.BaseSmallStatement] = []
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            new_nodes.append(node.with_changes(names=kept))
        new_nodes.extend(assigns)
        unit.replacements[id(node)] = constant(cst.FlattenSentinel(new_nodes))


def _alias_bound(alias: cst.ImportAlias) -> str:
    from extractors.bindings import dotted_name

    if alias.asname is not None:
        return dotted_name(alias.asname.name)
    return dotted_name(alias.name)


def _alias_module(alias: cst.ImportAlias) -> str:
    from extractors.bindings import dotted_name

    return dotted_name(alias.name)


def _function_of(parsed: ParsedModule, node: cst.CSTNode) -> cst.FunctionDef | None:
    for ancestor in parsed.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef):
            return ancestor
    return None
