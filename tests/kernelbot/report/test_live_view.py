"""The live view of `kernelbot evolve`: plain lines when stdout is not a terminal (a log, CI, a pipe) with
the essentials (stage, evaluations per minute, best per case, failures by stage), a rich panel on one."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from search_fakes import BumpMutator, FakeExecutor, make_tiny_task, program_source

from evolution.operators import OperatorSet
from evolution.progress import CaseBest, LineProgress, RichProgress, Snapshot, make_progress, panel
from kernelbot import exit_codes
from kernelbot.cli import main

ANSI = re.compile(r"\x1b\[")


@pytest.mark.slow
def test_a_real_search_piped_prints_plain_lines_with_the_essentials(interpreter_runs) -> None:
    out = interpreter_runs.resumed_output  # `kernelbot evolve --resume` with stdout a pipe
    assert ANSI.search(out) is None
    lines = out.splitlines()
    assert lines[0] == "evolving silu_small: resuming"
    progress = [line for line in lines if line.startswith("[silu_small] ")]
    stages = [line.split()[1] for line in progress]
    assert stages[-1] == "stopped" and "evolving" in stages  # a line at every change of stage
    last = progress[-1]
    assert re.search(r"evals \d+ \(\d+\.\d/min\)", last)
    assert "per case: t2_d64_fp32 ok, t1_d256_bf16 ok" in last  # correct, not timed by the interpreter
    assert "failures: correctness 1, flagged 1" in last


def test_speedups_per_case_and_failures_by_stage_in_plain_lines(tmp_path, monkeypatch, capsys) -> None:
    task = make_tiny_task(tmp_path / "task", [program_source(1.0), program_source(0, fail="compile")])
    monkeypatch.setattr("evolution.search.make_executor", lambda config, eval_config: FakeExecutor())
    monkeypatch.setattr(
        "evolution.search.build_operators",
        lambda config, device: OperatorSet.of([BumpMutator()], config.mutation.weights),
    )
    argv = ["evolve", str(task), "--out", str(tmp_path / "run"), "--iterations", "3"]
    assert main([*argv, "--backend", "triton-interpret", "--workers", "local"]) == exit_codes.OK
    out = capsys.readouterr().out
    assert ANSI.search(out) is None
    last = [line for line in out.splitlines() if line.startswith("[tiny_scale] ")][-1]
    assert last.startswith("[tiny_scale] stopped  iter 3/3")
    found = re.search(r"best (\d\.\d{3}) \(\w+\)  per case: n8 (\d\.\d\d)x", last)
    assert found is not None, last
    assert float(found.group(1)) > 1.0 and f"{float(found.group(1)):.2f}" == found.group(2)
    assert "failures: compile 1" in last and "/min)" in last


def _snapshot(**changes) -> Snapshot:
    values = dict(
        task="silu_and_mul",
        iterations=4,
        iteration_limit=20,
        evaluations=6,
        best_id="p7",
        best_score=1.21,
        outcomes={"passed": 4, "correctness": 1, "static": 1},
        tokens=0,
        elapsed_s=60.0,
        evaluations_this_session=6,
        event="llm:m p7: passed, score 1.210",
        cases=(
            CaseBest("t1_d2048_bf16", True, 1.394, (1.331, 1.449)),
            CaseBest("t16_d1792_fp32", True, 1.026, (0.984, 1.070)),
            CaseBest("t4096_d14336_bf16", False, skipped="over the interpreter's size cap"),
        ),
    )
    values.update(changes)
    return Snapshot(**values)  # type: ignore[arg-type]


def test_on_a_terminal_the_panel_shows_the_stage_and_the_best_per_case() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=150, color_system=None)
    progress = make_progress(console)
    assert isinstance(progress, RichProgress)
    progress.started(_snapshot(iterations=0, event="seeding", cases=()))
    progress.update(_snapshot())
    progress.finished(_snapshot(event="stopped: iterations"))
    shown = buf.getvalue()
    for expected in (
        "stopped",
        "best per case",
        "1.394x",
        "[1.331, 1.449]",
        "skipped",
    ):
        assert expected in shown, expected
    assert "6.0/min" in shown and "correctness" in shown and "static" in shown


def test_off_a_terminal_the_stage_change_prints_at_once() -> None:
    buf = io.StringIO()
    progress = make_progress(Console(file=buf, force_terminal=False, width=300))
    assert isinstance(progress, LineProgress)
    progress.started(_snapshot(iterations=0, event="seeding", cases=()))
    progress.update(_snapshot(iterations=0, event="seed a: passed"))  # the first line, then throttled
    progress.update(_snapshot(iterations=0, event="seed b: passed"))
    progress.update(_snapshot())  # seeding -> evolving: printed although within the interval
    lines = buf.getvalue().splitlines()
    assert [line.split()[1] for line in lines[1:]] == ["seeding", "evolving"]
    assert "per case: t1_d2048_bf16 1.39x, t16_d1792_fp32 1.03x, t4096_d14336_bf16 skipped" in lines[-1]
    assert "failures: correctness 1, static 1" in lines[-1]


def test_the_panel_can_be_embedded_by_another_live_view() -> None:
    console = Console(file=io.StringIO(), width=150, record=True, color_system=None)
    console.print(panel(_snapshot(), ["integrate: waiting for the search"]))
    shown = console.export_text()
    assert "best per case" in shown and "t16_d1792_fp32" in shown and "waiting for the search" in shown
