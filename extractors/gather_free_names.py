"""Gatherer: the names a piece of code needs from outside itself, read from LibCST's scope analysis.

Annotations are left out on purpose: the emitted reference starts with `from __future__ import annotations`,
so a type named only in a hint never has to exist at run time (SGLang hints `ForwardBatch` everywhere).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import BuiltinAssignment, GlobalScope, ImportAssignment, Scope

from extractors.parsed_module import ParsedModule


@dataclass
class FreeNames:
    # name as the module binds it (dotted for `import a.b`) -> access nodes (Name or Attribute)
    globals: dict[str, list[cst.CSTNode]] = field(default_factory=dict)
    # names bound nowhere (not local, not global, not builtin)
    unresolved: dict[str, list[cst.CSTNode]] = field(default_factory=dict)
    # accesses to imports made inside the code itself (function-level `from x import y`)
    local_imports: list[tuple[cst.CSTNode, ImportAssignment]] = field(default_factory=list)
    # every import statement inside the code
    imports: list[cst.Import | cst.ImportFrom] = field(default_factory=list)


class GatherFreeNames(cst.CSTVisitor):
    """Walk one statement (or function) and sort every name access by where its binding lives."""

    def __init__(self, parsed: ParsedModule, skip: frozenset[int] = frozenset()) -> None:
        super().__init__()
        self.parsed = parsed
        self.skip = skip  # ids of subtrees to ignore (decorators being dropped)
        self.visited: set[int] = set()
        self.scopes: dict[int, Scope] = {}
        self.result = FreeNames()

    @classmethod
    def of(cls, parsed: ParsedModule, node: cst.CSTNode, skip: frozenset[int] = frozenset()) -> FreeNames:
        gatherer = cls(parsed, skip)
        node.visit(gatherer)
        return gatherer.collect()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip:
            return False
        self.visited.add(id(node))
        scope = self.parsed.scopes.get(node)
        if scope is not None:
            self.scopes[id(scope)] = scope
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            self.result.imports.append(node)
        return True

    def collect(self) -> FreeNames:
        for scope in self.scopes.values():
            for access in scope.accesses:
                node = access.node
                if id(node) not in self.visited or access.is_annotation:
                    continue
                if not isinstance(node, (cst.Name, cst.Attribute)):
                    continue  # string annotations
                self._classify(node, access.referents)
        return self.result

    def _classify(self, node: cst.CSTNode, referents: object) -> None:
        refs = list(referents)  # type: ignore[call-overload]
        name = _access_name(node)
        if not refs:
            if not (name.startswith("__") and name.endswith("__")):
                self.result.unresolved.setdefault(name, []).append(node)
            return
        if any(isinstance(r, BuiltinAssignment) for r in refs):
            return
        global_refs = [r for r in refs if isinstance(r.scope, GlobalScope)]
        if global_refs:
            self.result.globals.setdefault(global_refs[0].name, []).append(node)
            return
        for ref in refs:
            if isinstance(ref, ImportAssignment) and id(ref.node) in self.visited:
                self.result.local_imports.append((node, ref))
                return
        # Anything else is bound locally: nothing to close over.


def _access_name(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_access_name(node.value)}.{node.attr.value}"
    return ""
