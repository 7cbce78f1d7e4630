"""What a report section is made of: a title, and either the reason it has nothing to show or a list of
blocks (facts, notes, figures, tables, code, collapsible details). Sections are plain data; the one
template (templates/report.html.j2) draws every kind of block the same way wherever it appears.

Text is escaped by the template; only `Figure.svg`, `Code.html` and `Html.html` carry markup, and they are
made by matplotlib, pygments and markdown-it (raw HTML off) from the run's files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class Facts:
    items: tuple[tuple[str, str], ...]
    kind: str = "facts"


@dataclass(frozen=True)
class Note:
    text: str
    tone: str = "info"  # "info" | "warn" | "missing"
    kind: str = "note"


@dataclass(frozen=True)
class Figure:
    svg: str
    caption: str = ""
    kind: str = "figure"


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    numeric: tuple[int, ...] = ()  # right-aligned columns
    kind: str = "table"


@dataclass(frozen=True)
class Code:
    html: str  # highlighted by kernelbot.report.highlight
    caption: str = ""
    kind: str = "code"


@dataclass(frozen=True)
class Html:
    html: str  # rendered by kernelbot.report.markdown
    kind: str = "html"


@dataclass(frozen=True)
class Details:
    summary: str
    blocks: tuple[Block, ...]
    open: bool = False
    kind: str = "details"


Block = Union[Facts, Note, Figure, Table, Code, Html, Details]  # noqa: UP007 - a runtime alias on 3.10


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    blocks: tuple[Block, ...] = ()
    missing: str = ""  # why this section has nothing to show ("" when it has)

    @classmethod
    def absent(cls, section_id: str, title: str, why: str) -> Section:
        return cls(section_id, title, missing=why)
