"""Running a target run's stages in order, each recording its outcome in RUN/target.toml before the next.

A stage is a function from the run's context to its outcome, a typed record (kernelbot.target.records) that
target.toml keeps and a later stage reads back. A stage already `done` is
skipped, unless it asks to run again (`rerun`: the propose stage does when a PR is to be opened or updated,
since the forge, not the local record, is the truth about PRs). A stage that raises is recorded `failed`
with its message, and the exception goes on to the command line's one error boundary; the next invocation
starts again at that stage. An outcome with a `refusal` ends the run with that message, now and at every
later invocation, without the stage being redone: it is a finished verdict, not a failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kernelbot.engines.model import Profile
from kernelbot.errors import KernelbotError
from kernelbot.target.options import TargetOptions
from kernelbot.target.records import ConfirmRecord, ExtractRecord, StageOutcome
from kernelbot.target.run_dir import read_confirm
from kernelbot.target.state import STAGES, TargetState
from kernelbot.target.view import StageView

if TYPE_CHECKING:
    from kernelbot.confirm.report import ConfirmReport


class ProposalRefused(KernelbotError):
    """Raised when verification found that the change breaks a test: nothing is proposed."""


@dataclass
class RunContext:
    run_dir: Path
    state: TargetState
    options: TargetOptions
    profile: Profile
    view: StageView

    def task_dir(self) -> Path:
        """RUN/task/, where the extract stage recorded it."""
        return self.state.resolve(self.state.record(ExtractRecord).task_dir)

    def confirmation(self) -> ConfirmReport | None:
        """The confirm stage's report (RUN/confirm.json): its figures are what a proposal prints, and
        `beats_current_path` is what the integration declares (SGLang `capabilities`). None for a run whose
        confirmation is not recorded (made before that stage existed)."""
        if not self.state.is_done(ConfirmRecord.STAGE):
            return None
        return read_confirm(self.run_dir, self.state.record(ConfirmRecord).report)


Out = TypeVar("Out", bound=StageOutcome)


@dataclass(frozen=True)
class Stage(Generic[Out]):
    name: str
    record: type[Out]  # what the stage returns and target.toml keeps
    run: Callable[[RunContext], Out]
    summary: Callable[[Out], str] = lambda outcome: ""
    rerun: Callable[[RunContext, Out], bool] = lambda ctx, outcome: False


def run_stages(stages: Sequence[Stage[Any]], ctx: RunContext) -> None:
    names = [s.name for s in stages]
    if tuple(names) != STAGES:
        raise ValueError(f"stages must be {STAGES}, got {names}")  # a kernelbot bug, not a user error
    state = ctx.state
    for stage in stages:
        if state.is_done(stage.name):
            outcome = state.record(stage.record, stage.name)
            if not stage.rerun(ctx, outcome):
                ctx.view.skipped(stage.name, stage.summary(outcome))
                _refuse_if_asked(outcome)
                continue
        started = time.monotonic()
        state.started(stage.name)
        ctx.view.started(stage.name)
        try:
            outcome = stage.run(ctx)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                message = "interrupted"
            elif isinstance(exc, KernelbotError):
                message = str(exc)
            else:
                message = f"crashed: {type(exc).__name__}: {exc}"
            state.failed(stage.name, message)
            ctx.view.failed(stage.name, message, time.monotonic() - started)
            raise
        state.finished(stage.name, outcome)
        ctx.view.finished(stage.name, stage.summary(outcome), time.monotonic() - started)
        _refuse_if_asked(outcome)


def _refuse_if_asked(outcome: StageOutcome) -> None:
    refusal = outcome.refused()
    if refusal:
        raise ProposalRefused(refusal)
