"""The Candidate contract: a Python source file defining the task's entry with Triton kernels.

Only the text between `# EVOLVE-BLOCK-START` and `# EVOLVE-BLOCK-END` may change from parent to child;
`check_evolve_block` enforces that before a child is ever evaluated.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from evaluators.errors import CandidateError, EvolveBlockViolation

EVOLVE_START = "# EVOLVE-BLOCK-START"
EVOLVE_END = "# EVOLVE-BLOCK-END"
_MARKER = re.compile(r"^[ \t]*# EVOLVE-BLOCK-(START|END)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class EvolveBlock:
    start_line: int  # 1-based line of the START marker
    end_line: int  # 1-based line of the END marker
    text: str  # lines strictly between the markers, newline-terminated


@dataclass(frozen=True)
class Candidate:
    source: str
    entry: str
    path: Path | None = None

    @property
    def sha(self) -> str:
        """Hash of the source with comments and blank-line noise removed: equal code, equal sha."""
        return hashlib.sha256(normalize_source(self.source).encode()).hexdigest()[:16]

    @property
    def evolve_block(self) -> EvolveBlock | None:
        return find_evolve_block(self.source)


def normalize_source(source: str) -> str:
    """Canonical text of the code (ast round-trip drops comments, quotes and spacing differences)."""
    try:
        return ast.unparse(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Unparseable or pathologically nested code (an LLM can emit either): fall back to the raw text.
        return source.strip()


def find_evolve_block(source: str) -> EvolveBlock | None:
    markers = [(m.group(1), source.count("\n", 0, m.start()) + 1) for m in _MARKER.finditer(source)]
    if not markers:
        return None
    kinds = [k for k, _ in markers]
    if kinds != ["START", "END"]:
        raise CandidateError(
            f"expected exactly one {EVOLVE_START} followed by one {EVOLVE_END}, found markers {kinds}"
        )
    (_, start), (_, end) = markers
    lines = source.splitlines(keepends=True)
    return EvolveBlock(start_line=start, end_line=end, text="".join(lines[start : end - 1]))


def replace_evolve_block(source: str, new_block: str) -> str:
    """Return `source` with the EVOLVE-BLOCK body replaced by `new_block` (markers kept)."""
    block = find_evolve_block(source)
    if block is None:
        raise CandidateError(f"source has no {EVOLVE_START}/{EVOLVE_END} block to replace")
    lines = source.splitlines(keepends=True)
    body = new_block if new_block.endswith("\n") or not new_block else new_block + "\n"
    return "".join(lines[: block.start_line]) + body + "".join(lines[block.end_line - 1 :])


def _outside_block(source: str) -> list[str]:
    block = find_evolve_block(source)
    lines = source.splitlines()
    if block is None:
        return lines
    return [*lines[: block.start_line], "<EVOLVE-BLOCK>", *lines[block.end_line - 1 :]]


def check_evolve_block(parent_source: str, child_source: str) -> None:
    """Reject a child whose code outside the parent's EVOLVE-BLOCK differs from the parent's.

    A parent without markers is entirely evolvable. Trailing whitespace is ignored so that an editor's
    cleanup does not count as an edit.
    """
    if find_evolve_block(parent_source) is None:
        return
    if find_evolve_block(child_source) is None:
        raise EvolveBlockViolation(f"the child dropped the {EVOLVE_START}/{EVOLVE_END} markers")
    before = [line.rstrip() for line in _outside_block(parent_source)]
    after = [line.rstrip() for line in _outside_block(child_source)]
    if before != after:
        diff = list(difflib.unified_diff(before, after, "parent", "child", lineterm="", n=1))
        shown = "\n".join(diff[:20])
        raise EvolveBlockViolation(f"the child edits code outside the EVOLVE-BLOCK:\n{shown}")


def parse_candidate(source: str, entry: str, path: Path | None = None) -> Candidate:
    """Check that `source` parses and defines `entry` at module level; raise CandidateError if not."""
    where = str(path) if path else "candidate"
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as exc:
        raise CandidateError(f"{where} does not parse: line {exc.lineno}: {exc.msg}") from exc
    defined = {
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    } | {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    if entry not in defined:
        raise CandidateError(f"{where} defines no top-level function {entry!r} (the task's entry)")
    find_evolve_block(source)  # raises on malformed markers
    return Candidate(source=source, entry=entry, path=path)


def load_candidate(path: str | Path, entry: str) -> Candidate:
    p = Path(path)
    if not p.is_file():
        raise CandidateError(f"candidate file {p} does not exist")
    try:
        source = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CandidateError(f"cannot read candidate {p}: {exc}") from exc
    return parse_candidate(source, entry, p.resolve())
