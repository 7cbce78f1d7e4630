"""Keeps what the formatter would change in lines we never touched out of the patch.

Upstream files are not always clean under the formatter their pre-commit config pins (a release formatted
by a newer tool, an exploded import isort would fold). Formatting the whole edited file would fold such
lines too, and the patch would carry changes nobody asked for. So: format the untouched file (fA) and the
edited one (fB); what the formatter changes in untouched lines is fA - A, what the edit (formatted) adds is
fB - fA; the result is A + (fB - fA), a three-way merge with fA as the base. When both touch the same
lines the merge gives up (None) and the caller keeps fB, the whole file formatted.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class _Change:
    start: int  # base line range [start, end) replaced by `lines`
    end: int
    lines: tuple[str, ...]


def merge_formatted(original: str, original_formatted: str, edited_formatted: str) -> str | None:
    """`original` with the changes that turn `original_formatted` into `edited_formatted`, or None."""
    base = original_formatted.splitlines(keepends=True)
    ours = _changes(base, original.splitlines(keepends=True))
    theirs = _changes(base, edited_formatted.splitlines(keepends=True))
    merged: list[_Change] = []
    for change in sorted({*ours, *theirs}, key=lambda c: (c.start, c.end)):
        if any(_overlap(change, other) for other in merged):
            return None
        merged.append(change)
    out: list[str] = []
    at = 0
    for change in sorted(merged, key=lambda c: (c.start, c.end != c.start, c.end)):
        out += base[at : change.start]
        out += change.lines
        at = change.end
    out += base[at:]
    return "".join(out)


def _changes(base: list[str], other: list[str]) -> list[_Change]:
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [
        _Change(i1, i2, tuple(other[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _overlap(a: _Change, b: _Change) -> bool:
    if a.start == a.end and b.start == b.end:  # two insertions at one place: order unknown
        return a.start == b.start
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end
