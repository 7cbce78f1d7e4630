"""The search's plots: best-score growth (overall and per island, evaluations on a second axis), evaluations
per minute, failures by stage and by reason over time, and the winner's per-case speedups with their
intervals. Each takes the numbers of kernelbot.report.series and returns an inline SVG."""

from __future__ import annotations

from dataclasses import dataclass

from kernelbot.report.figures import (
    BEST_COLOUR,
    COMPILE_COLOUR,
    EVALUATIONS_COLOUR,
    ISLAND_COLOURS,
    OUTCOME_COLOURS,
    REGIME_COLOURS,
    figure,
    svg_of,
)
from kernelbot.report.series import FAILURE_KINDS, Buckets, Growth, Reason

_TOP_REASONS = 5


def _steps(points: list[tuple[float, float]], end: float) -> tuple[list[float], list[float]]:
    """A step curve holding each value until the next, carried to `end`."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    if xs and end > xs[-1]:
        xs.append(end)
        ys.append(ys[-1])
    return xs, ys


def growth_svg(g: Growth) -> str:
    end = g.evaluations[-1][0]
    with figure("growth") as (fig, ax):
        if len(g.islands) > 1:
            for island, points in sorted(g.islands.items()):
                if points:
                    xs, ys = _steps(points, end)
                    colour = ISLAND_COLOURS[island % len(ISLAND_COLOURS)]
                    ax.step(xs, ys, where="post", color=colour, lw=1.1, alpha=0.85, label=f"island {island}")
        xs, ys = _steps(g.overall, end)
        ax.step(xs, ys, where="post", color=BEST_COLOUR, lw=2.6, label="best overall")
        ax.plot(xs[:1], ys[:1], "o", color=BEST_COLOUR, ms=4)
        ax.set_xlabel("elapsed time (min)")
        ax.set_ylabel("best score")
        counts = ax.twinx()
        counts.plot(
            [p[0] for p in g.evaluations],
            [p[1] for p in g.evaluations],
            color=EVALUATIONS_COLOUR,
            lw=1.2,
            ls="--",
            label="evaluations",
        )
        counts.set_ylabel("evaluations done")
        counts.set_ylim(bottom=0)
        counts.grid(False)
        handles, labels = ax.get_legend_handles_labels()
        more, more_labels = counts.get_legend_handles_labels()
        ax.legend(handles + more, labels + more_labels, loc="lower right", fontsize=8, ncol=2)
        return svg_of(fig, "growth")


def rate_svg(b: Buckets) -> str:
    width_min = b.width_s / 60.0
    with figure("rate", height_in=2.6) as (fig, ax):
        ax.bar(b.starts_min, b.per_minute(), width=width_min * 0.9, align="edge", color="#1e88e5")
        ax.set_xlabel("elapsed time (min)")
        ax.set_ylabel("evaluations / min")
        ax.set_title(f"buckets of {_duration(b.width_s)}", fontsize=8, loc="right", color="#666666")
        return svg_of(fig, "rate")


def failures_svg(b: Buckets, reasons: list[Reason]) -> str:
    width_min = b.width_s / 60.0
    with figure("failures", height_in=5.0, nrows=2, sharex=True) as (fig, (stages, causes)):
        bottom = [0] * len(b.starts_min)
        for kind in FAILURE_KINDS:
            counts = b.by_outcome.get(kind)
            if not counts:
                continue
            stages.bar(
                b.starts_min,
                counts,
                width=width_min * 0.9,
                align="edge",
                bottom=bottom,
                color=OUTCOME_COLOURS[kind],
                label=kind,
            )
            bottom = [x + y for x, y in zip(bottom, counts, strict=True)]
        stages.set_ylabel("failures per bucket")
        stages.legend(loc="upper left", fontsize=8, ncol=len(FAILURE_KINDS))
        for i, reason in enumerate(reasons[:_TOP_REASONS]):
            xs = [0.0, *reason.times_min, b.starts_min[-1] + width_min]
            ys = [0, *range(1, reason.count + 1), reason.count]
            colour = OUTCOME_COLOURS.get(reason.stage, "#555555")
            causes.step(
                xs,
                ys,
                where="post",
                color=colour,
                lw=1.4,
                ls=("-", "--", ":", "-.")[i % 4],
                label=f"{reason.stage}: {_short(reason.example)}",
            )
        causes.set_ylabel("seen so far")
        causes.set_xlabel("elapsed time (min)")
        causes.legend(loc="upper left", fontsize=7)
        return svg_of(fig, "failures")


@dataclass(frozen=True)
class CaseSpeedups:
    """One case of the winner: per regime (speedup, ci low, ci high), and the Inductor seed's when timed."""

    name: str
    winner: dict[str, tuple[float, float, float]]
    inductor: dict[str, tuple[float, float, float]]


def speedups_svg(cases: list[CaseSpeedups]) -> str:
    rows = len(cases)
    with figure("speedups", width_in=7.2, height_in=max(1.8, 0.42 * rows + 1.0)) as (fig, ax):
        offsets = {"graph": -0.16, "wall": 0.16}
        for regime, offset in offsets.items():
            ys = [i + offset for i, c in enumerate(cases) if regime in c.winner]
            values = [c.winner[regime] for c in cases if regime in c.winner]
            if values:
                ax.errorbar(
                    [v[0] for v in values],
                    ys,
                    xerr=[[v[0] - v[1] for v in values], [v[2] - v[0] for v in values]],
                    fmt="o",
                    color=REGIME_COLOURS[regime],
                    capsize=3,
                    label=f"winner, {regime}",
                )
            compiled = [(i + offset, c.inductor[regime]) for i, c in enumerate(cases) if regime in c.inductor]
            if compiled:
                ax.errorbar(
                    [v[0] for _, v in compiled],
                    [y for y, _ in compiled],
                    xerr=[[v[0] - v[1] for _, v in compiled], [v[2] - v[0] for _, v in compiled]],
                    fmt="D",
                    mfc="none",
                    color=COMPILE_COLOUR,
                    capsize=2,
                    ms=5,
                    label=f"torch.compile (Inductor seed), {regime}",
                )
        ax.axvline(1.0, color="#424242", lw=1, ls="--")
        ax.set_yticks(range(rows), [c.name for c in cases])
        ax.invert_yaxis()
        ax.set_xlabel("speedup over the reference (95 % CI)")
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7)
        return svg_of(fig, "speedups")


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"
