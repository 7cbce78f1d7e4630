"""Lift named top-level definitions, verbatim, out of an unpacked release, with everything they need from
the same package (helpers, constants, `@triton.jit` callees) and the third-party imports they use, into one
self-contained source text. That is how a shipped kernel becomes a candidate without being copied into this
repository: the text is read from the release cache when the candidate is assembled.

A definition is found where its module binds it: a `def` / `class`, an assignment, or an import (followed
into the package when it names one of its modules, kept as an import line otherwise). Names the caller
provides itself (`provided`) are not lifted, and `bindings` replace a module's own binding of a name (a
conditional import such as Liger's `rsqrt`, chosen by a version check the candidate does not need).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider


class LiftError(Exception):
    """A name the release does not bind, or binds in a way that cannot be lifted."""


@dataclass
class _Module:
    name: str
    tree: cst.Module
    bindings: dict[str, cst.CSTNode]  # top-level name -> the statement that binds it
    free_names: dict[int, set[str]]  # id(statement) -> global names it reads


@dataclass
class Lifted:
    imports: list[str] = field(default_factory=list)
    definitions: list[str] = field(default_factory=list)  # in dependency order
    origins: list[str] = field(default_factory=list)  # "liger_kernel.ops.swiglu:swiglu_forward"

    @property
    def source(self) -> str:
        return (
            "\n".join(self.imports) + "\n\n\n" + "\n\n".join(d.strip("\n") + "\n" for d in self.definitions)
        )


class Lifter:
    def __init__(self, root: Path, package: str) -> None:
        self.root = Path(root)
        self.package = package  # the release's top-level package: imports of it are followed
        self._modules: dict[str, _Module] = {}

    def lift(
        self,
        module: str,
        names: Iterable[str],
        provided: Iterable[str] = (),
        bindings: Mapping[str, str] | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> Lifted:
        out = Lifted()
        self._provided = set(provided)
        self._bindings = dict(bindings or {})
        self._aliases = dict(aliases or {})
        self._done: set[tuple[str, str]] = set()
        self._emitted: set[int] = set()
        for name in names:
            self._take(module, name, out)
        return out

    # --- one name ----------------------------------------------------------------------------------

    def _take(self, module_name: str, name: str, out: Lifted) -> None:
        if (module_name, name) in self._done or self._aliases.get(name, name) in self._provided:
            return
        self._done.add((module_name, name))
        if name in self._bindings:
            line = self._bindings[name]
            if line not in out.imports:
                out.imports.append(line)
            return
        module = self._module(module_name)
        statement = module.bindings.get(name)
        if statement is None:
            raise LiftError(f"{module_name} binds no top-level name {name!r}")
        if isinstance(statement, (cst.Import, cst.ImportFrom)):
            self._take_import(module, statement, name, out)
            return
        for dependency in sorted(module.free_names.get(id(statement), set())):
            if dependency != name:
                self._take(module_name, dependency, out)
        if id(statement) not in self._emitted:
            self._emitted.add(id(statement))
            alias = self._aliases.get(name)
            if alias is not None and isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                statement = statement.with_changes(name=cst.Name(alias))
            out.definitions.append(module.tree.code_for_node(statement))
            out.origins.append(f"{module_name}:{name}" + (f" (as {alias})" if alias else ""))

    def _take_import(
        self, module: _Module, statement: cst.Import | cst.ImportFrom, name: str, out: Lifted
    ) -> None:
        if isinstance(statement, cst.ImportFrom):
            source = _absolute(module.name, statement)
            for alias in statement.names if not isinstance(statement.names, cst.ImportStar) else ():
                imported = cst.helpers.get_full_name_for_node(alias.name) or ""
                bound = alias.asname.name.value if alias.asname else imported  # type: ignore[union-attr]
                if bound != name:
                    continue
                if source.split(".", 1)[0] == self.package:
                    if imported != name:
                        raise LiftError(
                            f"{module.name}: `{imported} as {name}` from the package: rename unsupported"
                        )
                    if self._is_module(f"{source}.{imported}"):
                        raise LiftError(f"{module.name}: {source}.{imported} is a module, not a definition")
                    self._take(source, imported, out)
                    return
                line = f"from {source} import {imported}" + (f" as {name}" if bound != imported else "")
                if line not in out.imports:
                    out.imports.append(line)
                return
        for alias in statement.names:  # type: ignore[union-attr]
            dotted = cst.helpers.get_full_name_for_node(alias.name) or ""
            bound = alias.asname.name.value if alias.asname else dotted.split(".", 1)[0]  # type: ignore[union-attr]
            if bound == name:
                if dotted.split(".", 1)[0] == self.package:
                    raise LiftError(f"{module.name}: `import {dotted}`: whole package modules are not lifted")
                line = f"import {dotted}" + (f" as {name}" if alias.asname else "")
                if line not in out.imports:
                    out.imports.append(line)
                return
        raise LiftError(f"{module.name}: cannot follow the import of {name!r}")

    # --- modules -----------------------------------------------------------------------------------

    def _is_module(self, dotted: str) -> bool:
        path = self.root.joinpath(*dotted.split("."))
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()

    def _module(self, dotted: str) -> _Module:
        if dotted not in self._modules:
            path = self.root.joinpath(*dotted.split("."))
            file = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
            if not file.is_file():
                raise LiftError(f"the release at {self.root} has no module {dotted}")
            self._modules[dotted] = _parse(dotted, file.read_text())
        return self._modules[dotted]


def _parse(dotted: str, text: str) -> _Module:
    tree = cst.parse_module(text)
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    positions = wrapper.resolve(PositionProvider)
    bindings: dict[str, cst.CSTNode] = {}
    spans: list[tuple[cst.CSTNode, int, int]] = []
    for statement in tree.body:
        start = positions[statement].start.line
        for decorator in getattr(statement, "decorators", ()):  # a def's position starts at `def`
            start = min(start, positions[decorator].start.line)
        spans.append((statement, start, positions[statement].end.line))
        for bound, binder in _bound_names(statement):
            bindings.setdefault(bound, binder)
    global_scope = scopes[tree]
    free: dict[int, set[str]] = {}
    for scope in set(scopes.values()):
        if scope is None:
            continue
        for access in scope.accesses:
            if not any(a.scope is global_scope for a in access.referents):
                continue
            node = access.node
            if node not in positions:
                continue
            line = positions[node].start.line
            for statement, start, end in spans:
                if start <= line <= end:
                    free.setdefault(id(_binder_of(statement, bindings)), set()).add(_access_name(access))
                    break
    return _Module(dotted, tree, bindings, free)


def _binder_of(statement: cst.CSTNode, bindings: dict[str, cst.CSTNode]) -> cst.CSTNode:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        inner = statement.body[0]
        if isinstance(inner, (cst.Import, cst.ImportFrom)):
            return inner
    return statement


def _access_name(access: object) -> str:
    node = access.node  # type: ignore[attr-defined]
    return node.value if isinstance(node, cst.Name) else str(getattr(access, "name", ""))


def _bound_names(statement: cst.CSTNode) -> list[tuple[str, cst.CSTNode]]:
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return [(statement.name.value, statement)]
    if not isinstance(statement, cst.SimpleStatementLine):
        return []  # if / try / for blocks bind conditionally: a caller's `bindings` must choose
    found: list[tuple[str, cst.CSTNode]] = []
    for small in statement.body:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    found.append((target.target.value, statement))
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
            found.append((small.target.value, statement))
        elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                name = alias.asname.name if alias.asname else alias.name  # type: ignore[union-attr]
                found.append((cst.helpers.get_full_name_for_node(name) or "", small))
        elif isinstance(small, cst.Import):
            for alias in small.names:
                dotted = cst.helpers.get_full_name_for_node(alias.name) or ""
                bound = alias.asname.name.value if alias.asname else dotted.split(".", 1)[0]  # type: ignore[union-attr]
                found.append((bound, small))
    return found


def _absolute(module: str, statement: cst.ImportFrom) -> str:
    target = cst.helpers.get_full_name_for_node(statement.module) if statement.module else ""
    if not statement.relative:
        return target or ""
    parts = module.split(".")[: -len(statement.relative)]
    return ".".join([*parts, target] if target else parts)
