"""The PR body (RUN/pr/body.md) as HTML: CommonMark with tables, raw HTML off (it is shown escaped), images
shown as links (nothing is fetched when the page is viewed), and the hidden kernelbot marker left out of the
rendering (the report lists it apart)."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

_MARKER = re.compile(r"^\s*<!--\s*kernelbot:(.*?)-->\s*$", re.MULTILINE)


def split_marker(body: str) -> tuple[str, str]:
    """(the body without its marker line, the marker's JSON text or "")."""
    found = _MARKER.search(body)
    if found is None:
        return body, ""
    return body[: found.start()] + body[found.end() :], found.group(1).strip()


def render_markdown(text: str) -> str:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
    md.disable("image")
    return md.render(text)
