"""`kernelbot report RUN`: one self-contained HTML page from a run directory.

RUN is either a `kernelbot evolve` run (RUN/run.sqlite) or a `kernelbot target` run (RUN/target.toml, its
search in RUN/search/). The page holds everything it shows: plots as inline SVG, code highlighted with CSS
classes, no script and a content security policy that forbids loading anything, so viewing it never touches
the network. Sections that have nothing to show say what is missing and why, so an empty run, a live one or
a killed one renders just as well as a finished one.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from evolution.store import STORE_FILE
from kernelbot import __version__
from kernelbot.errors import KernelbotError, RunStateError
from kernelbot.report.blocks import Section
from kernelbot.report.highlight import style_sheet
from kernelbot.report.search_data import EVOLVE_RESUME, NoSearch, SearchData, load_search
from kernelbot.report.search_sections import (
    failures_section,
    growth_section,
    overview_section,
    rate_section,
    when,
)
from kernelbot.report.target_data import TargetData, is_target_run, load_target
from kernelbot.report.target_sections import (
    body_section,
    e2e_section,
    target_facts,
    tests_section,
    timeline_section,
)
from kernelbot.report.winner_sections import code_section, feedback_section, lineage_section, speedups_section
from kernelbot.target import run_dir as layout

REPORT_FILE = "report.html"
TEMPLATE = "report.html.j2"
_TEMPLATES = Path(__file__).resolve().parent / "templates"
TARGET_RESUME = "running the same `kernelbot target` command again continues it"


class ReportError(KernelbotError):
    """Raised when the report cannot be written where it was asked to go."""


def sections_of(run_dir: Path) -> tuple[str, list[Section]]:
    """(the page's title, its sections in reading order) for RUN."""
    if not run_dir.is_dir():
        raise RunStateError(f"{run_dir} is not a directory holding a kernelbot run")
    target = load_target(run_dir) if is_target_run(run_dir) else None
    if target is None and not (run_dir / STORE_FILE).is_file():
        raise RunStateError(
            f"{run_dir} holds no kernelbot run: neither {STORE_FILE} (kernelbot evolve) nor target.toml"
            " (kernelbot target)"
        )
    hint = EVOLVE_RESUME if target is None else TARGET_RESUME
    search = load_search(_search_dir(run_dir, target), hint)
    if target is None and isinstance(search, NoSearch):
        raise RunStateError(
            search.reason
        )  # the store is the whole of an evolve run: say why it is unreadable
    facts = [("run directory", str(run_dir))]
    if target is not None:
        facts += target_facts(target)
    sections = [overview_section(search, facts)]
    if target is not None:
        last = (
            search.evaluations[-1]["finished_at"]
            if isinstance(search, SearchData) and search.evaluations
            else None
        )
        sections.append(timeline_section(target, last))
    sections += [
        growth_section(search),
        rate_section(search),
        failures_section(search),
        speedups_section(search),
    ]
    if target is not None:
        sections += [tests_section(target), e2e_section(target)]
    sections += [lineage_section(search), code_section(search), feedback_section(search)]
    if target is not None:
        sections.append(body_section(target))
    return _title(search, target), sections


def _search_dir(run_dir: Path, target: TargetData | None) -> Path:
    if target is None:
        return run_dir
    recorded = target.stage("evolve").outcome.get("search_dir")
    return run_dir / str(recorded) if recorded else layout.search_dir(run_dir)


def _title(search: SearchData | NoSearch, target: TargetData | None) -> str:
    if target is not None and target.function:
        return f"kernelbot target {target.profile}: {target.function}"
    if isinstance(search, SearchData):
        return f"kernelbot evolve: {search.task}"
    return "kernelbot run"


def build_report(run_dir: Path) -> str:
    title, sections = sections_of(run_dir)
    env = Environment(
        loader=FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["markup"] = Markup  # only for the SVG and HTML that matplotlib, pygments and markdown-it made
    return env.get_template(TEMPLATE).render(
        title=title,
        sections=sections,
        code_css=Markup(style_sheet()),
        generated=when(time.time()),
        version=__version__,
    )


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write the report (RUN/report.html unless `out` names a file) atomically; return its path."""
    html = build_report(run_dir)
    target = out if out is not None else run_dir / REPORT_FILE
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(html)
        os.chmod(tmp, 0o644)  # a page to share, not a private file (mkstemp makes it 0600)
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise ReportError(f"cannot write the report to {target}: {exc.strerror or exc}") from exc
    return target
