"""The PR body (RUN/pr/body.md) as HTML, the way a forge would show it, but safe to inline in the report.

CommonMark with tables (markdown-it-py). Raw HTML in the body passes only as a few bare tags a PR body uses
(`<details>`, `<summary>`, `<br>`, `<sub>`, ...; no attribute but `open`); any other tag or comment is shown
escaped, as text. Images become links, so viewing the page fetches nothing. The hidden kernelbot marker is
taken out before rendering (the report lists its fields apart).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

_MARKER = re.compile(r"^\s*<!--\s*kernelbot:(.*?)-->\s*$", re.MULTILINE)
_TAG = re.compile(r"<[^<>]*>")
_ALLOWED_TAG = re.compile(
    r"</?(details|summary|br|sub|sup|kbd|b|i|em|strong|code|p|ul|ol|li)\s*/?>|<details\s+open\s*>",
    re.IGNORECASE,
)


def split_marker(body: str) -> tuple[str, str]:
    """(the body without its marker line, the marker's JSON text or "")."""
    found = _MARKER.search(body)
    if found is None:
        return body, ""
    return body[: found.start()] + body[found.end() :], found.group(1).strip()


def safe_html(text: str) -> str:
    """Raw HTML from the body with every tag outside the allowlist (and all text) escaped."""
    out, pos = [], 0
    for tag in _TAG.finditer(text):
        out.append(escape(text[pos : tag.start()], quote=False))
        raw = tag.group(0)
        out.append(raw.lower() if _ALLOWED_TAG.fullmatch(raw) else escape(raw, quote=False))
        pos = tag.end()
    out.append(escape(text[pos:], quote=False))
    return "".join(out)


def _raw_html(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return safe_html(tokens[idx].content)


def render_markdown(text: str) -> str:
    md = MarkdownIt("commonmark", {"html": True, "linkify": False}).enable(["table", "strikethrough"])
    md.disable("image")
    md.add_render_rule("html_block", _raw_html)
    md.add_render_rule("html_inline", _raw_html)
    return md.render(text)
