"""The Jinja environment the integration's templates render in: templates/ as the loader, and a `docwrap`
filter that wraps a docstring's text to the repository's line length at a given indent, so generated
docstrings stay within the limit whatever names are substituted into them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).parent / "templates"
_QUOTES = '"""'


def environment(line_length: int) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )

    def docwrap(text: str, indent: int) -> str:
        """`text` wrapped for a docstring whose opening quotes sit at column `indent` (the template writes
        the indent and the quotes); the closing quotes get room on the last line."""
        pad = " " * indent
        wrapped = textwrap.fill(
            " ".join(text.split()),
            line_length - len(_QUOTES),
            initial_indent=pad + _QUOTES,
            subsequent_indent=pad,
        )
        return wrapped.removeprefix(pad + _QUOTES)

    env.filters["docwrap"] = docwrap
    return env


def fit_comments(source: str, width: int) -> str:
    """`source` with every comment kept within `width` columns (formatters wrap code, never comments): a
    block of comment lines with one too long is re-wrapped as one paragraph at its indent, a trailing
    comment that makes its line too long moves onto its own lines above it."""
    lines = source.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        prefix = indent + "# "
        if stripped.startswith("#") and not stripped.startswith("#!"):
            block = [line]
            while (
                i + 1 < len(lines)
                and lines[i + 1].startswith(prefix)
                and _comment_indent(lines[i + 1]) == indent
            ):
                i += 1
                block.append(lines[i])
            if any(len(b) > width for b in block):
                text = " ".join(b.strip().lstrip("#").strip() for b in block)
                out += textwrap.wrap(text, width, initial_indent=prefix, subsequent_indent=prefix)
            else:
                out += block
        elif len(line) > width and "  # " in stripped and not stripped.startswith(("'", '"')):
            code, _, comment = line.partition("  # ")
            out += textwrap.wrap(comment, width, initial_indent=prefix, subsequent_indent=prefix)
            out.append(code.rstrip())
        else:
            out.append(line)
        i += 1
    return "\n".join(out) + ("\n" if source.endswith("\n") else "")


def _comment_indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]
