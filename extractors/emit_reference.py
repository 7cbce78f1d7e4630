"""Writes the closed-over units as one self-contained, formatted reference.py with a provenance header."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from evaluators.subprocesses import run
from extractors.bindings import ThirdParty
from extractors.closure import STUB_HELPER, ClosureBuilder
from extractors.gather_typing_names import GatherTypingNames
from extractors.replace_nodes import FillEmptyBlocksTransformer, ReplaceNodesTransformer

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class Provenance:
    repo: str
    path: str
    qualname: str
    commit: str


def render_reference(builder: ClosureBuilder, provenance: Provenance, notes: list[str]) -> str:
    header = [
        f"# Extracted by `kernelbot extract` from {provenance.repo}",
        f"#   {provenance.path}:{provenance.qualname} @ {provenance.commit}",
        "# Self-contained: closed-over helpers follow in dependency order; it needs torch only.",
        *(f"# {line}" for line in notes),
    ]
    parts = ["\n".join(header), "from __future__ import annotations"]
    imports = _sorted_imports(builder.imports) if builder.imports else []
    if builder.stubs:
        stub_lines = [(TEMPLATES / "unavailable.py.tmpl").read_text().rstrip()]
        for name, reason in builder.stubs.items():
            stub_lines.append(f"{name} = {STUB_HELPER}({name!r}, {reason!r})")
        parts.append("\n\n".join(stub_lines[:1]) + "\n\n\n" + "\n".join(stub_lines[1:]))
    for unit in builder.units:
        node = unit.node.visit(ReplaceNodesTransformer(unit.replacements))
        if isinstance(node, cst.RemovalSentinel):
            continue
        if isinstance(node, cst.CSTNode):
            node = node.visit(FillEmptyBlocksTransformer())
        # A unit is one module-level statement, and its rewrites keep it one.
        if not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            raise TypeError(f"{unit.label} was rewritten into a {type(node).__name__}, not a statement")
        code = cst.Module(body=[node]).code.strip("\n")
        parts.append(code)
    typing_names = GatherTypingNames.missing(cst.parse_module("\n\n\n".join([*imports, *parts[2:]]) + "\n"))
    if typing_names:  # hints name them without an import (the closure leaves hints out): import them
        imports.insert(0, f"from typing import {', '.join(typing_names)}")
    if imports:
        parts.insert(2, "\n".join(imports))
    return format_source("\n\n\n".join(parts) + "\n")


def _sorted_imports(imports: dict[str, ThirdParty]) -> list[str]:
    def group(item: tuple[str, ThirdParty]) -> tuple[int, str]:
        line, binding = item
        return (0 if binding.package in sys.stdlib_module_names else 1, line)

    return [line for line, _ in sorted(imports.items(), key=group)]


def format_source(source: str) -> str:
    """ruff format when it is installed (line length 110), else LibCST's faithful code generation."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        return source
    argv = [ruff, "format", "--isolated", "--line-length", "110", "--stdin-filename", "reference.py", "-"]
    try:
        done = run(argv, input=source, timeout_s=60)
    except OSError:
        return source
    return done.stdout if done.ok and done.stdout else source
