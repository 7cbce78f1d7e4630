from __future__ import annotations

import io

from rich.console import Console

from evolution.progress import LineProgress, NullProgress, RichProgress, Snapshot, make_progress


def snap(**kw) -> Snapshot:
    base = dict(
        task="silu_and_mul",
        iterations=7,
        iteration_limit=20,
        evaluations=9,
        best_id="abc123",
        best_score=1.734,
        outcomes={"passed": 5, "correctness": 3, "flagged": 1},
        tokens=1200,
        elapsed_s=120.0,
        evaluations_this_session=6,
        islands=[
            {"island": 0, "elites": 3, "generation": 4, "coverage": 0.1, "best": "abc123", "best_score": 1.7}
        ],
        event="tune:launch abc123: passed, score 1.734",
    )
    base.update(kw)
    return Snapshot(**base)


def test_snapshot_rates_and_failures() -> None:
    s = snap()
    assert s.evaluations_per_minute == 3.0
    assert s.failures() == {"correctness": 3, "flagged": 1}
    line = s.line()
    assert "[silu_and_mul]" in line and "best 1.734 (abc123)" in line and "correctness 3" in line
    assert "tokens 1200" in line
    assert snap(elapsed_s=0.0).evaluations_per_minute == 0.0


def test_rich_panel_shows_best_rate_and_failures_by_stage() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=140, color_system=None)
    progress = make_progress(console)
    assert isinstance(progress, RichProgress)
    progress.started(snap(event="seeding"))
    progress.update(snap())
    progress.note("migration epoch 1: 2 program(s) moved along the ring")
    progress.finished(snap(event="stopped: iterations"))
    text = buf.getvalue()
    for expected in (
        "best 1.734",
        "3.0/min",
        "correctness",
        "flagged",
        "islands",
        "migration epoch 1",
        "stopped",
    ):
        assert expected in text, expected


def test_plain_lines_off_a_terminal_are_throttled() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=200)
    progress = make_progress(console)
    assert isinstance(progress, LineProgress)
    progress.started(snap(event="seeding"))
    for _ in range(5):
        progress.update(snap())
    progress.finished(snap())
    lines = buf.getvalue().splitlines()
    assert lines[0] == "evolving silu_and_mul: seeding"
    assert len(lines) == 3  # one update within the interval, then the final line
    assert isinstance(make_progress(console, quiet=True), NullProgress)
