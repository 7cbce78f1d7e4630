"""Finds the function or method a user names: `pkg.module:Qualname`, `path/to/file.py:Qualname`, or a bare
`Qualname` searched across the repository. Misses and ambiguities raise one error listing the candidates."""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from extractors.errors import AmbiguousTarget, TargetNotFound, UnsupportedCode
from extractors.parsed_module import Definition, ParsedModule
from extractors.repo_index import ModuleRef, RepoIndex

_QUALNAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


@dataclass(frozen=True)
class TargetSpec:
    module: str | None  # dotted module name
    path: str | None  # file path relative to the repo
    qualname: str

    @classmethod
    def parse(cls, text: str) -> TargetSpec:
        text = text.strip()
        location, sep, qualname = text.rpartition(":")
        if not sep:
            location, qualname = "", text
        if not _QUALNAME.match(qualname):
            raise TargetNotFound(
                f"--function {text!r}: expected package.module:Qualname, path/to/file.py:Qualname or Qualname"
            )
        if not location:
            return cls(None, None, qualname)
        if location.endswith(".py") or "/" in location or "\\" in location:
            return cls(None, location, qualname)
        if not _QUALNAME.match(location):
            raise TargetNotFound(f"--function {text!r}: {location!r} is neither a module name nor a .py path")
        return cls(location, None, qualname)


@dataclass(frozen=True)
class Located:
    ref: ModuleRef
    parsed: ParsedModule
    definition: Definition

    @property
    def is_method(self) -> bool:
        return bool(self.definition.classes)

    @property
    def owner(self) -> cst.ClassDef | None:
        return self.definition.classes[-1] if self.definition.classes else None

    @property
    def function(self) -> cst.FunctionDef:
        node = self.definition.node
        assert isinstance(node, cst.FunctionDef)
        return node


def find_target(index: RepoIndex, spec: TargetSpec) -> tuple[ModuleRef, str]:
    """The module and qualname of the target, checked with the fast stdlib parser (no LibCST yet)."""
    if spec.path is not None:
        path = (index.root / spec.path).resolve()
        if not path.is_relative_to(index.root.resolve()):
            raise TargetNotFound(f"--function: {spec.path} is outside the repository {index.root}")
        if not path.is_file():
            raise TargetNotFound(f"--function: no file {spec.path} in {index.root}")
        ref = index.module_for_path(path)
    elif spec.module is not None:
        ref = index.require_module(spec.module)
    else:
        return _search(index, spec.qualname)
    _check_defined(index, ref, spec.qualname)
    return ref, spec.qualname


def locate(index: RepoIndex, spec: TargetSpec) -> Located:
    ref, qualname = find_target(index, spec)
    return locate_in(index, ref, qualname)


def locate_in(index: RepoIndex, ref: ModuleRef, qualname: str) -> Located:
    parsed = index.parse(ref)
    matches = [d for d in parsed.definitions() if d.qualname == qualname]
    if len(matches) != 1:
        _check_defined(index, ref, qualname)  # raises the helpful message
        raise AmbiguousTarget(f"{index.relpath(ref.path)}: {qualname!r} matched {len(matches)} definitions")
    return _checked(Located(ref, parsed, matches[0]))


def _check_defined(index: RepoIndex, ref: ModuleRef, qualname: str) -> None:
    definitions = ast_definitions(ref.path)
    lines = [line for name, line, _ in definitions if name == qualname]
    if not lines:
        names = sorted({name for name, _, _ in definitions})
        near = difflib.get_close_matches(qualname, names, n=6, cutoff=0.5)
        tail = qualname.rpartition(".")[2]
        near += [n for n in names if n.endswith("." + tail) and n not in near][:4]
        hint = f"; near misses: {', '.join(near)}" if near else ""
        raise TargetNotFound(f"{index.relpath(ref.path)} defines no {qualname!r}{hint}")
    if len(lines) > 1:
        listed = ", ".join(f"line {n}" for n in lines)
        raise AmbiguousTarget(
            f"{index.relpath(ref.path)} defines {qualname!r} {len(lines)} times ({listed}), e.g. under a "
            "platform switch; move the variant you want into its own function or name it differently"
        )


def _search(index: RepoIndex, qualname: str) -> tuple[ModuleRef, str]:
    tail = qualname.rpartition(".")[2]
    pattern = re.compile(rf"\b(def|class)\s+{re.escape(tail)}\b")
    hits: list[ModuleRef] = []
    near: set[str] = set()
    for path in index.all_python_files():
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if not pattern.search(text):
            continue
        ref = index.module_for_path(path)
        for name, _, _ in ast_definitions(path):
            if name == qualname:
                hits.append(ref)
            elif name.endswith(tail):
                near.add(f"{ref.name}:{name}")
    if not hits:
        hint = f"; near misses: {', '.join(sorted(near)[:8])}" if near else ""
        raise TargetNotFound(f"no function or method {qualname!r} in {index.root}{hint}")
    if len(hits) > 1:
        listed = ", ".join(f"{h.name}:{qualname}" for h in hits[:10])
        raise AmbiguousTarget(
            f"{qualname!r} is defined {len(hits)} times in {index.root}: {listed}; pass one"
        )
    return hits[0], qualname


def ast_definitions(path: Path) -> list[tuple[str, int, str]]:
    """(qualname, line, "function"|"class") of module-level defs, methods and nested classes."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError) as exc:
        raise TargetNotFound(f"{path} does not parse: {exc}") from exc
    found: list[tuple[str, int, str]] = []

    def walk(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + stmt.name, stmt.lineno, "function"))
            elif isinstance(stmt, ast.ClassDef):
                found.append((prefix + stmt.name, stmt.lineno, "class"))
                walk(stmt.body, prefix + stmt.name + ".", True)
            elif isinstance(stmt, (ast.If, ast.Try)) and not in_class:
                blocks = [stmt.body, stmt.orelse]
                if isinstance(stmt, ast.Try):
                    blocks += [h.body for h in stmt.handlers] + [stmt.finalbody]
                for block in blocks:
                    walk(block, prefix, in_class)

    walk(tree.body, "", False)
    return found


def _checked(located: Located) -> Located:
    node = located.definition.node
    if isinstance(node, cst.ClassDef):
        raise UnsupportedCode(
            f"{located.definition.qualname} is a class; name one of its methods "
            f"(e.g. {located.definition.qualname}.forward)"
        )
    if node.asynchronous is not None:
        raise UnsupportedCode(f"{located.definition.qualname} is an async function; only plain functions")
    return located


def module_display(located: Located) -> str:
    return f"{located.ref.name}:{located.definition.qualname}"


__all__ = ["Located", "TargetSpec", "ast_definitions", "find_target", "locate", "locate_in", "module_display"]
