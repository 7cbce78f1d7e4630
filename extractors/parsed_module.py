"""One parsed source file with the LibCST metadata every extractor step reads (scopes, parents, positions,
qualified names), resolved once."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import (
    CodeRange,
    GlobalScope,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedName,
    QualifiedNameProvider,
    Scope,
    ScopeProvider,
)

from extractors.errors import ExtractionError
from extractors.slim_source import slim_source


@dataclass(frozen=True)
class Definition:
    """A function or class found by its dotted qualname; `classes` holds the enclosing class chain."""

    qualname: str
    node: cst.FunctionDef | cst.ClassDef
    classes: tuple[cst.ClassDef, ...]
    statement: cst.CSTNode  # the module-level statement holding it


class ParsedModule:
    def __init__(
        self,
        path: Path,
        name: str,
        is_package: bool,
        module: cst.Module,
        emptied: frozenset[str] = frozenset(),
    ) -> None:
        self.path = path
        self.emptied = emptied  # top-level defs/classes whose bodies were blanked (see slim_source)
        self.name = name
        self.is_package = is_package
        # The module was parsed for us alone: no need for the wrapper's defensive deep copy.
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.module = self.wrapper.module
        self.wrapper.resolve_many([ScopeProvider, ParentNodeProvider])  # one pass; `resolve` reads its cache
        self.scopes = self.wrapper.resolve(ScopeProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        # only messages need line numbers: resolved on first use
        self._positions: Mapping[cst.CSTNode, CodeRange] | None = None
        self._qualified_names: Mapping[cst.CSTNode, Collection[QualifiedName]] | None = None

    @classmethod
    def from_file(cls, path: Path, name: str, is_package: bool, keep: set[str] | None = None) -> ParsedModule:
        """Parse a file; with `keep`, bodies of other top-level defs/classes are blanked first."""
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ExtractionError(f"cannot read {path}: {exc}") from exc
        emptied: set[str] = set()
        if keep is not None:
            source, emptied = slim_source(source, keep)
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError as exc:
            raise ExtractionError(f"{path} does not parse: {exc}") from exc
        return cls(path, name, is_package, module, frozenset(emptied))

    @property
    def qualified_names(self) -> Mapping[cst.CSTNode, Collection[QualifiedName]]:
        if self._qualified_names is None:
            self._qualified_names = self.wrapper.resolve(QualifiedNameProvider)
        return self._qualified_names

    @property
    def positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        if self._positions is None:
            self._positions = self.wrapper.resolve(PositionProvider)
        return self._positions

    @property
    def global_scope(self) -> GlobalScope:
        scope = self.scopes[self.module]
        assert isinstance(scope, GlobalScope)
        return scope

    def scope_of(self, node: cst.CSTNode) -> Scope | None:
        return self.scopes.get(node)

    def line(self, node: cst.CSTNode) -> int:
        try:
            return self.positions[node].start.line
        except KeyError:
            return 0

    def where(self, node: cst.CSTNode) -> str:
        return f"{self.path.name}:{self.line(node)}"

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def top_level_statement(self, node: cst.CSTNode) -> cst.CSTNode:
        current = node
        while True:
            parent = self.parents.get(current)
            if parent is None or parent is self.module:
                return current
            current = parent

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parents.get(node)
        while current is not None:
            yield current
            current = self.parents.get(current)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # -- definitions by qualname -----------------------------------------------------------------------
    def definitions(self) -> list[Definition]:
        """Every module-level function/class and every method of (nested) classes, with dotted qualnames."""
        found: list[Definition] = []

        def walk(
            body: object, prefix: str, classes: tuple[cst.ClassDef, ...], statement: cst.CSTNode | None
        ) -> None:
            for stmt in _statements(body):
                top = statement if statement is not None else stmt
                if isinstance(stmt, cst.FunctionDef):
                    found.append(Definition(prefix + stmt.name.value, stmt, classes, top))
                elif isinstance(stmt, cst.ClassDef):
                    qual = prefix + stmt.name.value
                    found.append(Definition(qual, stmt, classes, top))
                    walk(stmt.body, qual + ".", (*classes, stmt), top)
                elif isinstance(stmt, (cst.If, cst.Try)) and not classes:
                    # Definitions under module-level `if`/`try` (platform switches) are still findable.
                    for block in _blocks(stmt):
                        walk(block, prefix, classes, top)

        walk(self.module, "", (), None)
        return found


def _statements(body: object) -> list[cst.CSTNode]:
    if isinstance(body, cst.Module):
        return list(body.body)
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    if isinstance(body, cst.SimpleStatementSuite):
        return []
    return []


def _blocks(stmt: cst.If | cst.Try) -> list[cst.BaseSuite]:
    blocks: list[cst.BaseSuite] = [stmt.body]
    if isinstance(stmt, cst.If):
        orelse = stmt.orelse
        while orelse is not None:
            blocks.append(orelse.body)
            orelse = orelse.orelse if isinstance(orelse, cst.If) else None
    else:
        blocks.extend(handler.body for handler in stmt.handlers)
        if stmt.orelse is not None:
            blocks.append(stmt.orelse.body)
        if stmt.finalbody is not None:
            blocks.append(stmt.finalbody.body)
    return blocks
