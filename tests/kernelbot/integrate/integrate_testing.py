"""Helpers of the integration tests: the codemod assertion (both sides dedented, like LibCST's CodemodTest)
and real source files read from the cached SGLang/LMDeploy releases (skipped when they cannot be fetched)."""

from __future__ import annotations

import difflib
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.codemod import Codemod

from extractors.errors import ExtractionError
from extractors.release_sources import fetch_release
from kernelbot.engines.model import Formatter
from kernelbot.formatting import format_files


def assert_transform(transform: cst.CSTTransformer | Codemod, before: str, after: str) -> str:
    """Apply `transform` to `before` (dedented) and compare with `after` (dedented); returns the result."""
    module = cst.parse_module(textwrap.dedent(before).lstrip("\n"))
    if isinstance(transform, Codemod):
        result = transform.transform_module(module).code
    else:
        result = module.visit(transform).code
    assert result == textwrap.dedent(after).lstrip("\n"), "\n" + result
    return result


def release_file(requirement: str, path: str) -> str:
    """The text of `path` in an unpacked release (sglang==0.5.23...), or a skip saying why not."""
    try:
        root = fetch_release(requirement)
    except ExtractionError as exc:
        pytest.skip(f"cannot obtain {requirement} (is the package registry reachable?): {exc}")
    return (Path(root) / path).read_text()


def release_root(requirement: str) -> Path:
    try:
        return Path(fetch_release(requirement))
    except ExtractionError as exc:
        pytest.skip(f"cannot obtain {requirement} (is the package registry reachable?): {exc}")


def formatter_changes(
    repo: Path, texts: dict[Path, str], formatter: Formatter
) -> dict[Path, list[tuple[list[str], list[str]]]]:
    """What the formatter changes in each text, placed beside its path in `repo` (one run for all of them):
    (old lines, new lines) per change."""
    probes = {path: path.with_name(f"_probe{i}_{path.name}") for i, path in enumerate(texts)}
    for path, probe in probes.items():
        (repo / probe).write_text(texts[path])
    try:
        format_files(repo, list(probes.values()), formatter)
        formatted = {path: (repo / probe).read_text() for path, probe in probes.items()}
    finally:
        for probe in probes.values():
            (repo / probe).unlink()
    changes = {}
    for path, text in texts.items():
        before, after = text.splitlines(), formatted[path].splitlines()
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        changes[path] = [
            (before[i1:i2], after[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
        ]
    return changes


def assert_formatter_is_satisfied(
    repo: Path, touched: tuple[Path, ...], formatter: Formatter, base: dict
) -> None:
    """Running the formatter again changes nothing it would not change on the untouched file too (the lines
    upstream left unformatted stay as they were; see kernelbot.integrate.line_merge)."""
    now = formatter_changes(repo, {path: (repo / path).read_text() for path in touched}, formatter)
    before = formatter_changes(repo, {path: base[path] for path in touched if path in base}, formatter)
    for path in touched:
        assert now[path] == before.get(path, []), f"{path}: the formatter would still change {now[path]}"
