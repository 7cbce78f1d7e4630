"""Code and diffs as highlighted HTML (pygments, CSS classes; the style sheet goes once into the page)."""

from __future__ import annotations

import difflib

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer

CSS_CLASS = "hl"
_MAX_CHARS = 200_000  # a pathological candidate must not make the page unusable


def _formatter(*, numbered: bool) -> HtmlFormatter:
    return HtmlFormatter(cssclass=CSS_CLASS, linenos="inline" if numbered else False, wrapcode=True)


def python_html(source: str) -> str:
    return highlight(_clip(source), PythonLexer(), _formatter(numbered=True))


def diff_text(before: str, after: str, before_name: str, after_name: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), before_name, after_name, n=3
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def diff_html(text: str) -> str:
    return highlight(_clip(text), DiffLexer(), _formatter(numbered=False))


def plain_html(text: str) -> str:
    """Text (logs, reasons) in the same box as code, without colouring."""
    from pygments.lexers.special import TextLexer

    return highlight(_clip(text), TextLexer(), _formatter(numbered=False))


def style_sheet() -> str:
    return HtmlFormatter(style="default").get_style_defs(f".{CSS_CLASS}")


def _clip(text: str) -> str:
    if len(text) <= _MAX_CHARS:
        return text
    return text[:_MAX_CHARS] + f"\n... ({len(text) - _MAX_CHARS} more characters not shown)\n"
