"""Turn an LLM's answer into a child candidate: SEARCH/REPLACE edits of the parent's EVOLVE-BLOCK, or a
rewrite of the block (or of the whole file, whose code outside the block must then be unchanged).

    <<<<<<< SEARCH
    exact lines of the parent's EVOLVE-BLOCK
    =======
    the lines that replace them
    >>>>>>> REPLACE

Each SEARCH text must occur exactly once inside the block (matched exactly, else line by line ignoring
trailing whitespace); text that exists only outside the block is refused, so the child never edits the
fixed part. Problems raise MalformedAnswer with a message the LLM mutator records as the outcome's error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evaluators.candidate import EVOLVE_END, EVOLVE_START, check_evolve_block, find_evolve_block
from evaluators.errors import CandidateError

_EDIT = re.compile(
    r"^[ \t]*<{5,9} ?SEARCH[ \t]*\n(?P<search>.*?)"
    r"^[ \t]*={5,9}[ \t]*\n(?P<replace>.*?)"
    r"^[ \t]*>{5,9} ?REPLACE[ \t]*$",
    re.DOTALL | re.MULTILINE,
)
_FENCE = re.compile(r"^```[ \t]*(?P<lang>[\w+-]*)[ \t]*\n(?P<code>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


class MalformedAnswer(Exception):
    """The answer cannot be applied to the parent; the message says why (it is stored as the error)."""


@dataclass(frozen=True)
class Edit:
    search: str
    replace: str


def parse_edits(answer: str) -> list[Edit]:
    """Every SEARCH/REPLACE block of `answer`, in order (fences around them are allowed)."""
    edits = [Edit(m.group("search"), m.group("replace")) for m in _EDIT.finditer(answer)]
    for i, edit in enumerate(edits, 1):
        if not edit.search.strip():
            raise MalformedAnswer(
                f"edit {i} has an empty SEARCH part (nothing to locate in the EVOLVE-BLOCK)"
            )
    return edits


def apply_edits(parent: str, edits: list[Edit]) -> str:
    """Apply `edits` in order to the parent's EVOLVE-BLOCK and return the child source."""
    if not edits:
        raise MalformedAnswer("the answer holds no <<<<<<< SEARCH / ======= / >>>>>>> REPLACE block")
    block = find_evolve_block(parent)
    body = block.text if block is not None else parent
    for i, edit in enumerate(edits, 1):
        body = _apply_one(body, edit, i, parent)
    return _with_body(parent, body)


def extract_rewrite(answer: str) -> str:
    """The code of a rewrite answer: the last fenced block (python preferred), or the bare answer if it
    parses as code without any fence."""
    fences = [(m.group("lang").lower(), m.group("code")) for m in _FENCE.finditer(answer)]
    python = [code for lang, code in fences if lang in ("python", "py", "")]
    if python:
        return python[-1]
    if fences:
        raise MalformedAnswer(f"the answer's code blocks are not Python (fenced as {fences[-1][0]!r})")
    if EVOLVE_START in answer or "def " in answer:
        return answer
    raise MalformedAnswer("the answer holds no ```python code block")


def apply_rewrite(parent: str, code: str) -> str:
    """The child for a rewrite: `code` is either the new block body or a whole file keeping the markers."""
    if EVOLVE_START in code or EVOLVE_END in code:
        try:
            block = find_evolve_block(code)
        except CandidateError as exc:
            raise MalformedAnswer(f"the rewrite's EVOLVE-BLOCK markers are malformed: {exc}") from exc
        if block is None:
            raise MalformedAnswer("the rewrite has one EVOLVE-BLOCK marker but not the other")
        if find_evolve_block(parent) is not None:
            ensure_within_block(parent, code)
        return code
    return _with_body(parent, code)


def ensure_within_block(parent: str, child: str) -> None:
    """Raise MalformedAnswer when `child` changes the parent outside the EVOLVE-BLOCK."""
    try:
        check_evolve_block(parent, child)
    except CandidateError as exc:
        raise MalformedAnswer(str(exc)) from exc


def _apply_one(body: str, edit: Edit, index: int, parent: str) -> str:
    count = body.count(edit.search)
    if count == 1:
        return body.replace(edit.search, edit.replace, 1)
    if count > 1:
        raise MalformedAnswer(
            f"edit {index}: its SEARCH text occurs {count} times in the EVOLVE-BLOCK; quote more"
        )
    span = _loose_find(body, edit.search)
    if span is not None:
        lines = body.splitlines(keepends=True)
        start, end = span
        replacement = edit.replace if edit.replace.endswith("\n") or not edit.replace else edit.replace + "\n"
        return "".join(lines[:start]) + replacement + "".join(lines[end:])
    if edit.search in parent or _loose_find(parent, edit.search) is not None:
        raise MalformedAnswer(f"edit {index} changes code outside the EVOLVE-BLOCK, which is fixed")
    first = edit.search.strip().splitlines()[0][:80]
    raise MalformedAnswer(f"edit {index}: its SEARCH text is not in the EVOLVE-BLOCK (first line: {first!r})")


def _loose_find(text: str, search: str) -> tuple[int, int] | None:
    """Line span where `search` matches `text` ignoring trailing whitespace, if exactly one does."""
    lines = [line.rstrip() for line in text.splitlines()]
    wanted = [line.rstrip() for line in search.strip("\n").splitlines()]
    if not wanted:
        return None
    hits = [i for i in range(len(lines) - len(wanted) + 1) if lines[i : i + len(wanted)] == wanted]
    return (hits[0], hits[0] + len(wanted)) if len(hits) == 1 else None


def _with_body(parent: str, body: str) -> str:
    block = find_evolve_block(parent)
    if block is None:
        return body
    lines = parent.splitlines(keepends=True)
    text = body if body.endswith("\n") or not body else body + "\n"
    return "".join(lines[: block.start_line]) + text + "".join(lines[block.end_line - 1 :])
