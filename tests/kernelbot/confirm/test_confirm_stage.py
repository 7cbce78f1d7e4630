"""The confirm stage's plumbing under Triton's interpreter: fresh evaluation workers per column, the JSON in
RUN/confirm.json and the stage's outcome in target.toml, a current path that cannot be imported recorded
with why, no figure claimed (the interpreter never times), and a resumed run that does not confirm again."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "evaluators"))
from pool_tasks import GOOD, write_task

import kernelbot.confirm
from kernelbot.confirm import NOT_MEASURED_INTERPRETER
from kernelbot.target.options import TargetOptions
from kernelbot.target.records import ConfirmRecord, EvolveRecord, ExtractRecord, StageOutcome
from kernelbot.target.run_dir import CONFIRM_FILE, read_confirm
from kernelbot.target.runner import RunContext, Stage, run_stages
from kernelbot.target.stages import confirm_stage
from kernelbot.target.state import STAGES, RepoRecord, TargetState
from kernelbot.target.view import PlainView


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    task = write_task(run, "task")
    toml = task / "task.toml"
    toml.write_text('current_path = "kb_no_such_engine.ops:scale_shift"\n' + toml.read_text())
    (run / "best.py").write_text(GOOD)
    state = TargetState(run, "example", "pkg.mod:f", RepoRecord("example", "upstream", "a" * 40, "main"))
    for outcome in (
        ExtractRecord(task_dir="task"),
        EvolveRecord(kernel_file="best.py", search_dir="search", backend="triton-interpret"),
    ):
        state.started(outcome.STAGE)
        state.finished(outcome.STAGE, outcome)
    return run


@dataclass(frozen=True)
class Nothing(StageOutcome):
    """The record of a stage these tests do not run for real."""


def _stages() -> list[Stage[Any]]:
    def nothing(ctx: RunContext) -> Nothing:
        return Nothing()

    return [
        Stage(n, ConfirmRecord, confirm_stage) if n == "confirm" else Stage(n, Nothing, nothing)
        for n in STAGES
    ]


def _context(run: Path) -> RunContext:
    return RunContext(
        run,
        TargetState.load(run),
        TargetOptions("example", "pkg.mod:f"),
        None,
        PlainView(Console(record=True)),
    )


@pytest.mark.slow  # three evaluation workers on the interpreter: ~13 s of CPU
def test_the_confirm_stage_runs_fresh_processes_writes_json_and_is_not_redone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run_dir(tmp_path)
    run_stages(_stages(), _context(run))

    report = read_confirm(run)
    assert not report.measured and report.reason == NOT_MEASURED_INTERPRETER
    assert report.backend == "triton-interpret" and report.beats_current_path is None
    eager, compiled, current = report.columns
    assert (eager.name, eager.processes, compiled.name, compiled.processes) == ("eager", 1, "compile", 1)
    assert not eager.cells and not compiled.cells  # nothing timed: no figure to claim
    assert not current.available and current.processes == 0
    assert "cannot import kb_no_such_engine.ops" in current.reason
    assert report.wall_s > 0 and not report.failures
    data = json.loads((run / CONFIRM_FILE).read_text())
    assert data["beats_current_path"] is None and data["rule"]["min_processes"] == 3
    outcome = TargetState.load(run).record(ConfirmRecord)
    assert outcome.processes == {"eager": 1, "compile": 1, "current": 0}
    assert outcome.reason == NOT_MEASURED_INTERPRETER

    # A resumed run finds the stage done and does not confirm again.
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("confirmed twice")

    monkeypatch.setattr(kernelbot.confirm, "confirm", refuse)
    written = (run / CONFIRM_FILE).stat().st_mtime_ns
    run_stages(_stages(), _context(run))
    assert (run / CONFIRM_FILE).stat().st_mtime_ns == written
