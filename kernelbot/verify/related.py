"""Which of a repository's test files exercise a change: those that import a touched module, found statically.

Every `test_*.py` / `*_test.py` file under the repository (hidden directories, virtual environments and build
output skipped) is parsed with `ast`, never imported: a test module may need a GPU or a package that is not
installed here. A file is related when one of its imports names a touched module, directly
(`import a.b.mod`, `from a.b.mod import f`, `from a.b import mod`) or through a relative import resolved
against the file's own package. Only direct importers count: a repository like SGLang imports its layers from
almost everywhere, and the closure would be the whole suite.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        "build",
        "dist",
        "site-packages",
        "__pycache__",
        "venv",
        "env",
        "3rdparty",
        "third_party",
    }
)


def module_name(relpath: Path, source_root: str = "") -> str | None:
    """`python/sglang/srt/layers/x.py` with source root `python` -> `sglang.srt.layers.x` (None: not Python
    or outside the source root). A package's `__init__.py` names the package."""
    if relpath.suffix != ".py":
        return None
    parts = list(relpath.with_suffix("").parts)
    if source_root:
        root = list(Path(source_root).parts)
        if parts[: len(root)] != root:
            return None
        parts = parts[len(root) :]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def is_test_file(path: Path) -> bool:
    return path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))


def test_files(repo: Path) -> Iterator[Path]:
    """Test files under `repo`, relative to it, in sorted order."""
    for path in sorted(_walk(repo)):
        yield path.relative_to(repo)


def _walk(directory: Path) -> Iterator[Path]:
    for entry in directory.iterdir():
        if entry.name.startswith(".") or entry.name in SKIPPED_DIRS:
            continue
        if entry.is_dir() and not entry.is_symlink():
            if (entry / "pyvenv.cfg").exists():  # a virtual environment inside the checkout
                continue
            yield from _walk(entry)
        elif entry.is_file() and is_test_file(entry):
            yield entry


def imported_modules(source: str, package: str = "") -> set[str]:
    """Every module an import statement of `source` may name: `from a import b` yields both `a` and `a.b`
    (b may be a submodule). Relative imports are resolved against `package` (the file's own package)."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(node, package)
            if base is None:
                continue
            if base:
                found.add(base)
            found.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names)
    return found


def _resolve_from(node: ast.ImportFrom, package: str) -> str | None:
    if node.level == 0:
        return node.module or ""
    parts = package.split(".") if package else []
    if node.level - 1 > len(parts):
        return None  # climbs above the top package: not resolvable statically
    base = parts[: len(parts) - (node.level - 1)]
    if node.module:
        base.append(node.module)
    return ".".join(base)


def related_test_files(repo: Path, touched: Iterable[Path], source_root: str = "") -> list[Path]:
    """Test files of `repo` (relative paths) that import one of the `touched` files' modules."""
    targets = {name for name in (module_name(Path(p), source_root) for p in touched) if name}
    if not targets:
        return []
    related = []
    for rel in test_files(repo):
        try:
            source = (repo / rel).read_text(encoding="utf-8")
            package = _package_of(rel, source_root)
            imports = imported_modules(source, package)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue  # a file Python cannot parse is not a test pytest could run either
        if imports & targets:
            related.append(rel)
    return related


def _package_of(relpath: Path, source_root: str) -> str:
    """The package a test file's relative imports start from ("" when it is not inside one)."""
    name = module_name(relpath, source_root) or module_name(relpath)
    if name is None:
        return ""
    return name if relpath.name == "__init__.py" else name.rpartition(".")[0]
