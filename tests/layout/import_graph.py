"""The import graph of kernelbot's packages, read from their source with `ast` (nothing is imported).

Every import statement counts, wherever it stands: at module level, under `if TYPE_CHECKING:`, or deferred
inside a function. A deferred import keeps Python's import machinery from tripping over a cycle, not the
design: evolution.executors once imported evolution.ray_executor inside a function while ray_executor
imported executors at module level, and neither could be read, tested or replaced without the other.

    python tests/layout/import_graph.py     # prints every cycle and layering violation; exit 1 if any
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("evaluators", "extractors", "evolution", "kernelbot")

# Who may not import whom (ARCHITECTURE.md: evaluators at the bottom; extractors and evolution on it, side
# by side; kernelbot orchestrates all three and nothing imports it).
FORBIDDEN: Mapping[str, frozenset[str]] = {
    "evaluators": frozenset({"extractors", "evolution", "kernelbot"}),
    "extractors": frozenset({"evolution", "kernelbot"}),
    "evolution": frozenset({"extractors", "kernelbot"}),
}


@dataclass(frozen=True)
class Edge:
    source: str  # importing module, dotted
    target: str  # imported module of one of the packages, dotted
    path: str  # the importing file, relative to the repository root
    line: int

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the packages (a package is its __init__)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


class ImportCollector(ast.NodeVisitor):
    """Collects what a module's import statements name, with their lines: `import a.b` names a.b;
    `from a import b` names the submodule a.b if there is one, else a itself (b is a name defined in a).
    Relative imports are resolved against the module's own package."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.names: list[tuple[str, str, int]] = []  # (name, fallback when name is no module, line)

    def visit_Import(self, node: ast.Import) -> None:
        self.names.extend((alias.name, alias.name, node.lineno) for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parts = self.package.split(".")
            anchor = parts[: len(parts) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        self.names.extend((f"{base}.{alias.name}", base, node.lineno) for alias in node.names)


def _owning_module(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of `name` that is one of our modules, or None (a third-party or stdlib name)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_edges(root: Path = REPO, packages: Iterable[str] = PACKAGES) -> list[Edge]:
    """One edge per (importing module, imported module of the packages), at its first import statement."""
    modules = module_files(root, packages)
    edges: dict[tuple[str, str], Edge] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        collector = ImportCollector(package)
        collector.visit(ast.parse(path.read_text(), filename=str(path)))
        for imported, fallback, line in collector.names:
            target = imported if imported in modules else _owning_module(fallback, modules)
            if target is None or target == name:
                continue
            edges.setdefault((name, target), Edge(name, target, path.relative_to(root).as_posix(), line))
    return sorted(edges.values(), key=lambda e: (e.source, e.target))


def cycles(edges: Iterable[Edge]) -> list[list[Edge]]:
    """Every strongly connected set of modules that import each other, each as one closed path of edges."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
        graph.setdefault(edge.target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graph is a few hundred modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph[node]:
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_closed_path(graph, component) for component in components]


def _closed_path(graph: Mapping[str, list[Edge]], component: set[str]) -> list[Edge]:
    """A shortest cycle through the component's first module (breadth-first inside the component)."""
    start = min(component)
    came_by: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in graph[node]:
                if edge.target not in component:
                    continue
                if edge.target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, came_by[path[0].source])
                    return path
                if edge.target not in came_by:
                    came_by[edge.target] = edge
                    following.append(edge.target)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def layering_violations(edges: Iterable[Edge]) -> list[Edge]:
    """Edges from a package to one it may not import (FORBIDDEN)."""
    return [
        edge
        for edge in edges
        if edge.target.split(".")[0] in FORBIDDEN.get(edge.source.split(".")[0], frozenset())
    ]


def describe_cycle(path: list[Edge]) -> str:
    return " -> ".join(f"{edge.source} ({edge.where()})" for edge in path) + f" -> {path[0].source}"


def describe_edge(edge: Edge) -> str:
    return f"{edge.source} imports {edge.target} ({edge.where()})"


def main() -> int:
    edges = import_edges()
    problems = [f"cycle: {describe_cycle(path)}" for path in cycles(edges)]
    problems += [f"layering: {describe_edge(edge)}" for edge in layering_violations(edges)]
    for line in problems:
        print(line)
    print(f"{len(edges)} imports among {', '.join(PACKAGES)}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
