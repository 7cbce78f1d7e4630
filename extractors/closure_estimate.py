"""A fast, approximate count of how much code closing over a name would copy, using the stdlib `ast`
(an order of magnitude cheaper than LibCST's metadata). The closure asks before copying a repository
definition that is only reached from inside a function body: a class such as SGLang's `SWAKVPool`, named in
one `isinstance` check, would otherwise drag in the whole memory-pool subsystem. Past the budget the name
becomes a stub that raises if reached, and the summary says so.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from extractors.repo_index import ModuleRef, RepoIndex


@dataclass
class _Module:
    ref: ModuleRef
    statements: list[ast.stmt]
    bindings: dict[str, list[int]] = field(default_factory=dict)  # name -> indices of top-level statements


class ClosureEstimate:
    def __init__(self, index: RepoIndex) -> None:
        self.index = index
        self._modules: dict[Path, _Module | None] = {}

    def count(self, ref: ModuleRef, name: str, limit: int) -> int:
        """Statements reachable from `name` in `ref` (stops counting a little past `limit`)."""
        seen: set[tuple[Path, int]] = set()
        queue: list[tuple[ModuleRef, str]] = [(ref, name)]
        visited_names: set[tuple[Path, str]] = set()
        while queue and len(seen) <= limit:
            module_ref, wanted = queue.pop()
            if (module_ref.path, wanted) in visited_names:
                continue
            visited_names.add((module_ref.path, wanted))
            module = self._module(module_ref)
            if module is None:
                continue
            if wanted not in module.bindings:
                queue.extend((star, wanted) for star in self._stars(module))
            for i in module.bindings.get(wanted, []):
                stmt = module.statements[i]
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    queue.extend(self._follow_import(module_ref, stmt, wanted))
                    continue
                if (module_ref.path, i) in seen:
                    continue
                seen.add((module_ref.path, i))
                queue.extend((module_ref, n) for n in _free_names(stmt))
        return len(seen)

    def needed(self, ref: ModuleRef, name: str, budget: int, cap: int = 3000) -> dict[Path, set[str]]:
        """Top-level names per module that the closure of `name` may touch, following names used only in
        function bodies just when their own closure fits in `budget` (the rule the real closure applies)."""
        keep: dict[Path, set[str]] = {}
        queue: list[tuple[ModuleRef, str, bool]] = [(ref, name, False)]
        visited: set[tuple[Path, str]] = set()
        while queue and len(visited) < cap:
            module_ref, wanted, lazy = queue.pop()
            if (module_ref.path, wanted) in visited:
                continue
            if lazy and self.count(module_ref, wanted, budget) > budget:
                continue
            visited.add((module_ref.path, wanted))
            module = self._module(module_ref)
            if module is None:
                continue
            keep.setdefault(module_ref.path, set()).add(wanted)
            if wanted not in module.bindings:
                queue.extend((star, wanted, lazy) for star in self._stars(module))
            for i in module.bindings.get(wanted, []):
                stmt = module.statements[i]
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    queue.extend((r, n, lazy) for r, n in self._follow_import(module_ref, stmt, wanted))
                    continue
                keep[module_ref.path].update(_bound_names(stmt))
                eager, in_bodies = free_names_split(stmt)
                queue.extend((module_ref, n, lazy) for n in eager)
                queue.extend((module_ref, n, True) for n in in_bodies)
        return keep

    def _stars(self, module: _Module) -> list[ModuleRef]:
        found = []
        for stmt in module.statements:
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                base = (
                    self.index.resolve_relative(module.ref, stmt.level, stmt.module)
                    if stmt.level
                    else (stmt.module or "")
                )
                target = self.index.find_module(base) if base else None
                if target is not None:
                    found.append(target)
        return found

    def _follow_import(
        self, ref: ModuleRef, stmt: ast.Import | ast.ImportFrom, wanted: str
    ) -> list[tuple[ModuleRef, str]]:
        if isinstance(stmt, ast.Import):
            return []  # a module object: its attributes are counted where they are used
        base = (
            self.index.resolve_relative(ref, stmt.level, stmt.module) if stmt.level else (stmt.module or "")
        )
        target = self.index.find_module(base) if base else None
        if target is None:
            return []
        for alias in stmt.names:
            if (alias.asname or alias.name) == wanted:
                return [(target, alias.name)]
        return []

    def _module(self, ref: ModuleRef) -> _Module | None:
        if ref.path in self._modules:
            return self._modules[ref.path]
        try:
            tree = ast.parse(ref.path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            self._modules[ref.path] = None
            return None
        module = _Module(ref, list(tree.body))
        for i, stmt in enumerate(tree.body):
            for bound in _bound_names(stmt):
                module.bindings.setdefault(bound, []).append(i)
        self._modules[ref.path] = module
        return module


def _bound_names(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    names: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _free_names(stmt: ast.stmt) -> set[str]:
    eager, lazy = free_names_split(stmt)
    return eager | lazy


def free_names_split(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """Names loaded in `stmt` and bound nowhere inside it (annotations left out, like the real closure),
    split into those needed when the statement runs (eager) and those used only inside function bodies."""
    loaded_eager: set[str] = set()
    loaded_lazy: set[str] = set()
    bound: set[str] = set()
    annotations = {id(n) for n in ast.walk(stmt) for n in _annotation_roots(n)}
    stack: list[tuple[ast.AST, bool]] = [(stmt, False)]
    while stack:
        node, in_body = stack.pop()
        if id(node) in annotations:
            continue
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                (loaded_lazy if in_body else loaded_eager).add(node.id)
            else:
                bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if not isinstance(node, ast.Lambda) and node is not stmt:
                bound.add(node.name)
            body = [node.body] if isinstance(node, ast.Lambda) else node.body
            body_ids = {id(b) for b in body}
            for child in ast.iter_child_nodes(node):
                stack.append((child, in_body or id(child) in body_ids))
            continue
        if isinstance(node, ast.ClassDef) and node is not stmt:
            bound.add(node.name)
        stack.extend((child, in_body) for child in ast.iter_child_nodes(node))
    return loaded_eager - bound, loaded_lazy - bound - loaded_eager


def _annotation_roots(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.arg) and node.annotation is not None:
        return [node.annotation]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        return [node.returns]
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []
