"""Rendering a proposal's body (and its reproduce.sh) from Evidence through the Jinja2 templates in
pr_templates/: `<profile template>.md.j2` arranges the sections of kernelbot.propose.sections under the
target repo's headings; the hidden marker is appended last."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import jinja2

import kernelbot
import pr_templates
from kernelbot.errors import ConfigError
from kernelbot.forge.marker import Marker, with_marker
from kernelbot.propose.evidence import Evidence
from kernelbot.propose.sections import all_sections

BODY_SUFFIX = ".md.j2"
# pr_templates/ is a directory of templates, not Python: a namespace package, whose path may also hold an
# editable install's hook entry, hence only the entries that are directories.
TEMPLATE_DIRS = [Path(p) for p in pr_templates.__path__ if os.path.isdir(p)]

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATE_DIRS),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
)
_ENV.filters["sh"] = lambda value: (
    shlex.join(value) if isinstance(value, (list, tuple)) else shlex.quote(str(value))
)


def body_templates() -> list[str]:
    """The template names a profile may ask for ("sglang" for pr_templates/sglang.md.j2, ...)."""
    names = {entry.name for d in TEMPLATE_DIRS for entry in d.iterdir()}
    return sorted(
        n.removesuffix(BODY_SUFFIX) for n in names if n.endswith(BODY_SUFFIX) and not n.startswith("_")
    )


def marker_of(evidence: Evidence) -> Marker:
    return Marker(
        op=evidence.op.slug,
        kernel_hash=evidence.op.kernel_hash,
        base_sha=evidence.repo.base_sha,
        tool=kernelbot.__version__,
    )


def render_body(evidence: Evidence, template: str) -> str:
    """The PR body: the template filled from the evidence's sections, tidied, with the marker at the end."""
    if template not in body_templates():
        raise ConfigError(
            f"no PR template {template!r}: pr_templates/ has {', '.join(body_templates())} "
            f"(a profile's template names one of them)"
        )
    text = _ENV.get_template(f"{template}{BODY_SUFFIX}").render(s=all_sections(evidence))
    return with_marker(tidy(text), marker_of(evidence))


def render_reproduce(evidence: Evidence) -> str:
    return tidy(_ENV.get_template("reproduce.sh.j2").render(e=evidence))


def tidy(text: str) -> str:
    """No trailing blanks on lines, at most one empty line in a row, one final newline."""
    lines = [line.rstrip() for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"
