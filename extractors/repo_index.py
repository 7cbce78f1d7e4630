"""Maps dotted module names to files of one repository and keeps each parsed module once.

A repository may keep its packages at the top (`pkg/`), under `src/` or `python/` (SGLang), or be an
unpacked wheel. A *source root* is a directory whose children are top-level packages; it is found by walking
up from a file while `__init__.py` files continue.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from extractors.errors import AmbiguousTarget, ExtractionError, TargetNotFound
from extractors.parsed_module import ParsedModule

_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".tox", ".eggs"}
_CONVENTIONAL_ROOTS = ("", "src", "python", "lib")


@dataclass(frozen=True)
class ModuleRef:
    name: str  # dotted name, e.g. "sglang.srt.layers.layernorm"
    path: Path
    is_package: bool = False

    @property
    def package(self) -> str:
        """The package relative imports start from."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


@dataclass
class RepoIndex:
    root: Path
    _parsed: dict[Path, ParsedModule] = field(default_factory=dict)
    _roots: list[Path] = field(default_factory=list)
    keep: dict[Path, set[str]] = field(default_factory=dict)
    _full: set[Path] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.root = self.root.resolve()
        if not self.root.is_dir():
            raise ExtractionError(f"--repo {self.root} is not a directory")
        for rel in _CONVENTIONAL_ROOTS:
            candidate = self.root / rel if rel else self.root
            if candidate.is_dir() and candidate not in self._roots:
                self._roots.append(candidate)

    # -- files and module names -------------------------------------------------------------------------
    def source_root_of(self, path: Path) -> Path:
        """The parent of the topmost package directory above `path` (namespace packages — directories
        without `__init__.py` between packages, as in SGLang's releases — are walked through)."""
        directory = path.resolve().parent
        topmost: Path | None = None
        current = directory
        while True:
            if (current / "__init__.py").is_file():
                topmost = current
            if current == self.root or current.parent == current:
                break
            current = current.parent
        root = topmost.parent if topmost is not None else directory
        if not str(directory).startswith(str(self.root)):
            root = directory
        if root not in self._roots:
            self._roots.append(root)
        return root

    def module_for_path(self, path: Path) -> ModuleRef:
        path = path.resolve()
        root = self.source_root_of(path)
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        return ModuleRef(".".join(parts), path, is_package)

    def find_module(self, name: str) -> ModuleRef | None:
        """The file of a dotted module name inside this repo, or None (third-party or missing)."""
        parts = name.split(".")
        found: list[ModuleRef] = []
        for root in list(self._roots):
            base = root.joinpath(*parts)
            if (base / "__init__.py").is_file():
                found.append(ModuleRef(name, (base / "__init__.py").resolve(), True))
            elif base.with_suffix(".py").is_file():
                found.append(ModuleRef(name, base.with_suffix(".py").resolve(), False))
        unique = {ref.path: ref for ref in found}
        if len(unique) > 1:
            paths = ", ".join(str(p) for p in unique)
            raise AmbiguousTarget(f"module {name!r} exists in several source roots of {self.root}: {paths}")
        return next(iter(unique.values()), None)

    def require_module(self, name: str) -> ModuleRef:
        ref = self.find_module(name)
        if ref is None:
            near = difflib.get_close_matches(name, self.all_module_names(), n=5, cutoff=0.6)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise TargetNotFound(f"no module {name!r} in {self.root}{hint}")
        return ref

    def resolve_relative(self, current: ModuleRef, dots: int, module: str | None) -> str:
        package = current.package.split(".") if current.package else []
        if dots - 1 > len(package):
            raise ExtractionError(f"{current.path}: relative import goes above the top-level package")
        base = package[: len(package) - (dots - 1)] if dots > 1 else package
        return ".".join([*base, *(module.split(".") if module else [])])

    def all_python_files(self) -> list[Path]:
        files: list[Path] = []
        for path in sorted(self.root.rglob("*.py")):
            rel_parts = path.relative_to(self.root).parts
            if any(part in _SKIP_DIRS or part.startswith(".") for part in rel_parts[:-1]):
                continue
            files.append(path)
        return files

    def all_module_names(self) -> list[str]:
        names = []
        for path in self.all_python_files():
            try:
                names.append(self.module_for_path(path).name)
            except ValueError:
                continue
        return names

    # -- parsing ------------------------------------------------------------------------------------------
    def parse(self, ref: ModuleRef) -> ParsedModule:
        parsed = self._parsed.get(ref.path)
        if parsed is None:
            keep = None if ref.path in self._full else self.keep.get(ref.path)
            parsed = ParsedModule.from_file(ref.path, ref.name, ref.is_package, keep)
            self._parsed[ref.path] = parsed
        return parsed

    def plan(self, keep: dict[Path, set[str]]) -> None:
        """Parse these modules slimmed to the listed top-level names (see slim_source)."""
        self.keep = keep

    def reparse_full(self, path: Path) -> None:
        """A blanked definition turned out to be needed: parse that module whole from now on."""
        self._full.add(path)
        self._parsed.pop(path, None)

    def relpath(self, path: Path) -> str:
        try:
            return str(path.resolve().relative_to(self.root))
        except ValueError:
            return str(path)
