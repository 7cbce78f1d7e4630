"""RUN/target.toml and the stage runner: outcomes recorded before the next stage, resumes at the first
unfinished stage, failures and refusals kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console

from kernelbot.errors import ConfigError, RunStateError
from kernelbot.target.options import TargetOptions
from kernelbot.target.records import EvolveRecord, ExtractRecord, StageOutcome
from kernelbot.target.run_dir import STATE_FILE
from kernelbot.target.runner import ProposalRefused, RunContext, Stage, run_stages
from kernelbot.target.state import STAGES, RepoRecord, TargetState
from kernelbot.target.view import PlainView, RichView, make_view


def new_state(run_dir: Path) -> TargetState:
    state = TargetState(run_dir, "example", "pkg.mod:f", RepoRecord("example", "upstream", "a" * 40, "main"))
    state.save()
    return state


def test_round_trip_and_relative_paths(tmp_path: Path) -> None:
    state = new_state(tmp_path)
    state.started("extract")
    state.finished("extract", ExtractRecord("task", name="f", spec=None))
    loaded = TargetState.load(tmp_path)
    assert loaded.profile == "example" and loaded.repo == state.repo
    assert loaded.outcome("extract") == {
        "task_dir": "task",
        "name": "f",
        "entry": "",
        "target": "",
        "inputs": "",
        "probe": "",
    }  # None dropped
    assert loaded.record(ExtractRecord) == ExtractRecord("task", name="f")
    assert loaded.first_unfinished() == "evolve"
    assert state.relative(tmp_path / "worktree" / "x.py") == "worktree/x.py"
    assert state.relative(Path("/elsewhere")) == "/elsewhere"
    assert state.resolve("worktree") == tmp_path / "worktree"
    assert not list(tmp_path.glob(".target.toml-*"))  # the atomic write left no temporary behind
    with pytest.raises(RunStateError, match="has not finished"):
        loaded.outcome("evolve")
    with pytest.raises(RunStateError, match="has not finished"):
        loaded.record(EvolveRecord)


def test_records_round_trip_with_tuples_paths_and_nested_records(tmp_path: Path) -> None:
    from kernelbot.target.records import IntegrateRecord, ProposeRecord, PullRequestRecord

    state = new_state(tmp_path)
    integrate = IntegrateRecord(
        "worktree",
        "op",
        Path("pkg/op_triton.py"),
        Path("tests/test_op.py"),
        touched=(Path("pkg/a.py"),),
        test_command=("pytest", "-q"),
        cpu_test_env={"TRITON_INTERPRET": "1"},
    )
    propose = ProposeRecord("pr", "kernelbot/op", "abc", "t", PullRequestRecord("opened", number=7, url="u"))
    for record in (integrate, propose):
        state.started(record.STAGE)
        state.finished(record.STAGE, record)
    loaded = TargetState.load(tmp_path)
    assert loaded.record(IntegrateRecord) == integrate
    assert loaded.record(ProposeRecord) == propose
    assert loaded.outcome("propose")["pr"] == {"action": "opened", "reason": "", "number": 7, "url": "u"}
    state.stages["extract"] = state.stages["propose"]  # a table that is not an extract record
    with pytest.raises(RunStateError, match="extract outcome is malformed"):
        state.record(ExtractRecord)


def test_unreadable_and_foreign_state(tmp_path: Path) -> None:
    with pytest.raises(RunStateError, match="holds no kernelbot target run"):
        TargetState.load(tmp_path)
    (tmp_path / STATE_FILE).write_text("schema = 99\n")
    with pytest.raises(RunStateError, match="schema 99"):
        TargetState.load(tmp_path)
    (tmp_path / STATE_FILE).write_text("schema = 1\nprofile = 'x'\n")
    with pytest.raises(RunStateError, match="incomplete or malformed"):
        TargetState.load(tmp_path)


@dataclass(frozen=True)
class Counted(StageOutcome):
    """A stage's record in these tests: how many stages ran, and a refusal when told to."""

    STAGE: ClassVar[str] = "any"

    n: int
    refusal: str | None = None

    def refused(self) -> str | None:
        return self.refusal


class Recorder:
    """Stages that log their calls; any of them can be told to fail or to refuse."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail: dict[str, BaseException] = {}
        self.refuse: set[str] = set()

    def stage(self, name: str, rerun: bool = False) -> Stage:
        def run(ctx: RunContext) -> Counted:
            self.calls.append(name)
            # Each stage sees the ones before it finished and recorded.
            assert all(ctx.state.is_done(s) for s in STAGES[: STAGES.index(name)])
            assert TargetState.load(ctx.run_dir).stages[name].status == "running"
            if name in self.fail:
                raise self.fail[name]
            return Counted(len(self.calls), f"{name} says no" if name in self.refuse else None)

        summary = lambda o: f"n={o.n}"
        if rerun:
            return Stage(name, Counted, run, summary, lambda ctx, o: ctx.options.open_pr)
        return Stage(name, Counted, run, summary)

    def stages(self) -> list[Stage]:
        return [self.stage(n, rerun=(n == "propose")) for n in STAGES]


def context(run_dir: Path, console: Console, **options: Any) -> RunContext:
    return RunContext(
        run_dir,
        TargetState.load(run_dir),
        TargetOptions("example", "pkg.mod:f", **options),
        None,
        PlainView(console),
    )


def test_stages_run_in_order_and_resume_where_they_stopped(tmp_path: Path) -> None:
    new_state(tmp_path)
    console = Console(record=True, width=200)
    rec = Recorder()
    rec.fail["integrate"] = ConfigError("formatter black is not installed")
    with pytest.raises(ConfigError):
        run_stages(rec.stages(), context(tmp_path, console))
    assert rec.calls == ["extract", "evolve", "confirm", "integrate"]
    state = TargetState.load(tmp_path)
    assert state.stages["integrate"].status == "failed"
    assert state.stages["integrate"].error == "formatter black is not installed"
    assert state.first_unfinished() == "integrate"

    del rec.fail["integrate"]
    run_stages(rec.stages(), context(tmp_path, console))
    assert rec.calls == ["extract", "evolve", "confirm", "integrate", "integrate", "verify", "propose"]
    text = console.export_text()
    assert "[extract] already done: n=1" in text and "[verify] done in" in text
    assert TargetState.load(tmp_path).first_unfinished() is None

    # Everything is done: a re-run does nothing, except the propose stage when a PR is to be opened.
    run_stages(rec.stages(), context(tmp_path, console))
    assert len(rec.calls) == 7
    run_stages(rec.stages(), context(tmp_path, console, open_pr=True))
    assert rec.calls[-1] == "propose" and len(rec.calls) == 8


def test_a_refusal_is_recorded_done_and_repeated(tmp_path: Path) -> None:
    new_state(tmp_path)
    console = Console(record=True, width=200)
    rec = Recorder()
    rec.refuse.add("verify")
    with pytest.raises(ProposalRefused, match="verify says no"):
        run_stages(rec.stages(), context(tmp_path, console))
    state = TargetState.load(tmp_path)
    assert state.is_done("verify") and not state.is_done("propose")
    with pytest.raises(ProposalRefused, match="verify says no"):
        run_stages(rec.stages(), context(tmp_path, console))
    assert rec.calls.count("verify") == 1 and "propose" not in rec.calls


def test_a_crash_and_an_interrupt_leave_the_stage_unfinished(tmp_path: Path) -> None:
    new_state(tmp_path)
    rec = Recorder()
    rec.fail["extract"] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        run_stages(rec.stages(), context(tmp_path, Console(record=True)))
    assert TargetState.load(tmp_path).stages["extract"].error == "interrupted"
    rec.fail["extract"] = RuntimeError("boom")
    with pytest.raises(RuntimeError):
        run_stages(rec.stages(), context(tmp_path, Console(record=True)))
    assert TargetState.load(tmp_path).stages["extract"].error == "crashed: RuntimeError: boom"


def test_plain_lines_without_a_terminal() -> None:
    console = Console(record=True, force_terminal=False)
    view = make_view(console)
    assert isinstance(view, PlainView)
    view.started("verify")
    view.step("tests on the base: 1 related file(s)")
    view.finished("verify", "0 new failures", 3.25)
    assert console.export_text().splitlines() == [
        "[verify] started",
        "[verify] tests on the base: 1 related file(s)",
        "[verify] done in 3.2s: 0 new failures",
    ]


def test_a_live_view_on_a_terminal() -> None:
    console = Console(record=True, force_terminal=True, width=120)
    view = make_view(console)
    assert isinstance(view, RichView)
    view.started("verify")
    view.step("benchmark run 1/5 on the base")
    view.finished("verify", "0 new failures", 3.25)
    view.started("evolve")  # draws its own panel: no spinner, steps become lines
    view.step("seed silu.py")
    view.failed("evolve", "no kernel", 1.0)
    view.close()
    text = console.export_text()
    assert "✓ verify 3.2s 0 new failures" in text and "seed silu.py" in text and "✗ evolve" in text
