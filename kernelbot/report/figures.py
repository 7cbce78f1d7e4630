"""Matplotlib figures (Agg, no display) turned into SVG elements that can sit inline in one HTML page.

Text stays text (`svg.fonttype = none`: smaller, selectable, drawn with the viewer's sans-serif font), the
XML prologue and metadata are dropped, and every id a figure defines (and each reference to it) is prefixed
with the figure's name, so several figures in one document never share an id.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: never a GUI backend, also where a display exists

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType  # the rcParams names, as the installed matplotlib declares them

# The overall best curve's colour is used by no other element of the report, so a screenshot can tell
# that the growth plot was drawn (tests/kernelbot/report/test_report_browser.py looks for it).
BEST_COLOUR = "#d81b60"
EVALUATIONS_COLOUR = "#9e9e9e"
ISLAND_COLOURS = ("#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00acc1", "#6d4c41", "#3949ab", "#c0ca33")
REGIME_COLOURS = {"graph": "#1e88e5", "wall": "#fb8c00"}
COMPILE_COLOUR = "#616161"
OUTCOME_COLOURS = {
    "passed": "#c8e6c9",
    "static": "#8e24aa",
    "compile": "#fb8c00",
    "correctness": "#e53935",
    "timing": "#fdd835",
    "flagged": "#212121",
}
STAGE_COLOURS = {"done": "#43a047", "failed": "#e53935", "running": "#1e88e5"}

_STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "legend.frameon": False,
}
_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
_PROLOGUE = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(href="#|url\(#)([^")]+)')


@contextmanager
def figure(name: str, width_in: float = 9.0, height_in: float = 3.4, **subplots: Any) -> Iterator[Any]:
    """`with figure("growth") as (fig, ax): ...` -> then `svg_of(fig, "growth")`. The figure is closed on
    exit, whatever happens, so a report never leaks matplotlib state."""
    with plt.rc_context({**_STYLE, "svg.hashsalt": name}):
        fig, axes = plt.subplots(figsize=(width_in, height_in), **subplots)
        try:
            yield fig, axes
        finally:
            plt.close(fig)


def svg_of(fig: Figure, name: str) -> str:
    """The figure as an `<svg>` element for inline use (ids prefixed with `name`)."""
    buf = io.StringIO()
    with plt.rc_context({**_STYLE, "svg.hashsalt": name}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata=_METADATA)
    text = _PROLOGUE.sub("", buf.getvalue(), count=1)
    text = _ID.sub(lambda m: f'id="{name}-{m.group(1)}"', text)
    text = _REF.sub(lambda m: f"{m.group(1)}{name}-{m.group(2)}", text)
    text = text.replace("<svg ", '<svg class="figure" ', 1)  # the page shrinks it to fit (CSS)
    return text.strip()
