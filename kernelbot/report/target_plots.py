"""The target run's plots: the stage timeline (one bar per stage, coloured by how it ended) and the
end-to-end benchmark's samples on both sides with their means."""

from __future__ import annotations

from kernelbot.report.figures import REGIME_COLOURS, STAGE_COLOURS, figure, svg_of
from kernelbot.report.target_data import StageRow


def timeline_svg(stages: list[StageRow], origin: float, now: float) -> str:
    """`origin`: the run's start; a stage still running (or killed while running) extends to `now`."""
    with figure("timeline", height_in=0.45 * len(stages) + 1.0) as (fig, ax):
        for i, stage in enumerate(stages):
            if stage.started_at is None:
                continue
            end = stage.finished_at if stage.finished_at is not None else now
            start_min = (stage.started_at - origin) / 60.0
            length = max((end - stage.started_at) / 60.0, 1e-3)
            colour = STAGE_COLOURS.get(stage.status, "#9e9e9e")
            ax.barh(i, length, left=start_min, color=colour, height=0.55)
            ax.text(start_min + length, i, f" {stage.status}", va="center", fontsize=8, color="#424242")
        ax.set_yticks(range(len(stages)), [s.name for s in stages])
        ax.invert_yaxis()
        ax.set_xlabel("minutes since the run started")
        return svg_of(fig, "timeline")


def e2e_svg(before: list[float], after: list[float], means: dict[str, float], metric: str, unit: str) -> str:
    """Every sample as a dot, each side's mean (as verify.json holds it) as a bar."""
    with figure("e2e", width_in=6.0, height_in=2.4) as (fig, ax):
        sides = (("before", before, "#757575"), ("after", after, REGIME_COLOURS["graph"]))
        for row, (side, values, colour) in enumerate(sides):
            ax.plot(values, [row] * len(values), "o", color=colour, alpha=0.75, ms=6)
            mean = means.get(side)
            if isinstance(mean, (int, float)):
                ax.plot([mean, mean], [row - 0.3, row + 0.3], color=colour, lw=2.2)
        ax.set_yticks([0, 1], ["base", "change"])
        ax.set_ylim(-0.6, 1.6)
        ax.invert_yaxis()
        ax.set_xlabel(f"{metric} ({unit})" if unit else metric)
        return svg_of(fig, "e2e")
