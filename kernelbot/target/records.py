"""The typed outcome of each stage of a target run, as RUN/target.toml keeps it (kernelbot.target.run_dir).

    ExtractRecord    where the Task is and how its inputs were made
    EvolveRecord     the search's winner and how the search ended
    ConfirmRecord    what the fresh-process confirmation concluded (its figures are in RUN/confirm.json)
    IntegrateRecord  the work tree and what the integration changed in it (verify and propose read it)
    VerifyRecord     the verdict of the tests and the end-to-end benchmark (the figures are in verify.json)
    ProposeRecord    the bundle, and the pull request opened or updated from it

A stage returns its record; target.toml stores it as a table (None fields left out: TOML has no null) and a
later stage, or a resumed run, reads the same record back. Paths are relative to RUN (or absolute when
outside it); an integration's paths are relative to the repository root.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="StageOutcome")


@dataclass(frozen=True)
class StageOutcome:
    """The base of every stage record: its stage's name, and its conversion to and from a TOML table."""

    STAGE: ClassVar[str] = ""

    def refused(self) -> str | None:
        """The message that ends the run, now and at every later invocation (only a verdict refuses)."""
        return None

    def to_table(self) -> dict[str, object]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_table(cls: type[R], table: Mapping[str, Any]) -> R:
        """The record a table written by `to_table` holds; keys it does not know are ignored and missing
        ones take their defaults (a record written by an older kernelbot still reads)."""
        hints = typing.get_type_hints(cls)
        values = {
            f.name: _typed(hints[f.name], table[f.name]) for f in dataclasses.fields(cls) if f.name in table
        }
        try:
            return cls(**values)
        except TypeError as exc:  # a field without a default is missing
            raise ValueError(f"the {cls.STAGE} outcome is incomplete: {exc}") from exc


def _plain(value: object) -> object:
    """A field as TOML holds it: paths as POSIX strings, tuples as lists, nested records as tables."""
    if isinstance(value, StageOutcome):
        return value.to_table()
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _typed(hint: Any, value: Any) -> Any:
    """A TOML value as the field's annotation wants it (tuples, paths, nested records, optional ones)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if value is None:
        return None
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _typed(inner[0], value) if len(inner) == 1 else value
    if origin is tuple:
        return tuple(_typed(args[0], v) for v in value)
    if origin is dict:
        return {str(k): _typed(args[1], v) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, StageOutcome):
        return hint.from_table(value)
    if hint is Path:
        return Path(value)
    if hint is float:
        return float(value)
    if hint in (str, int, bool):
        return hint(value)
    return value


@dataclass(frozen=True)
class ExtractRecord(StageOutcome):
    STAGE: ClassVar[str] = "extract"

    task_dir: str  # relative to RUN
    name: str = ""
    entry: str = ""
    target: str = ""
    inputs: str = ""  # where inputs.py came from: "spec", "draft", ...
    spec: str | None = None  # the input spec used, when one was
    probe: str = ""  # "ok", "skipped", or the probe's error


@dataclass(frozen=True)
class EvolveRecord(StageOutcome):
    STAGE: ClassVar[str] = "evolve"

    search_dir: str  # relative to RUN
    kernel_file: str  # the winner's source, relative to RUN
    program_id: str = ""
    kernel_sha: str = ""
    operator: str = ""
    score: float = 0.0
    speedup: float | None = None  # None: correct, but the backend could not time it
    backend: str = ""
    stop_reason: str = ""
    evaluations: int = 0
    iterations: int = 0
    sandbox: str = ""
    elapsed_s: float | None = None  # the search's wall time (None: a finished search read back)


@dataclass(frozen=True)
class ConfirmRecord(StageOutcome):
    STAGE: ClassVar[str] = "confirm"

    report: str  # RUN/confirm.json, relative to RUN
    measured: bool = False
    reason: str = ""
    beats_current_path: bool | None = None
    processes: dict[str, int] = field(default_factory=dict)  # per baseline column
    wall_s: float = 0.0


@dataclass(frozen=True)
class IntegrateRecord(StageOutcome):
    """What the integration changed in RUN/worktree (paths relative to the repository root): the part of a
    kernelbot.integrate.Integration that verification and the proposal read, so that a resumed run needs no
    second integration."""

    STAGE: ClassVar[str] = "integrate"

    worktree: str  # relative to RUN
    op_slug: str
    kernel_module: Path
    test_file: Path
    touched: tuple[Path, ...] = ()
    test_command: tuple[str, ...] = ()
    envelope: tuple[str, ...] = ()  # the envelope's description, one condition a line
    cpu_test_env: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    formatter: str = ""
    slot: str = ""
    auto_selected: bool = False
    selection: str = ""
    in_compile_region: bool = False
    bench_file: str = ""


@dataclass(frozen=True)
class VerifyRecord(StageOutcome):
    STAGE: ClassVar[str] = "verify"

    report: str  # RUN/verify.json, relative to RUN
    ok: bool
    tests_ran: bool = True
    tests_reason: str = ""
    refusal: str | None = None  # set when the change breaks a test: the run ends there
    tests_run: tuple[str, ...] = ()
    passed_before: int = 0
    passed_after: int = 0
    new_failures: tuple[str, ...] = ()
    preexisting_failures: tuple[str, ...] = ()
    e2e_measured: bool = False
    e2e_reason: str = ""
    e2e_delta_pct: float | None = None
    e2e_ci_pct: tuple[float, ...] | None = None  # (low, high)
    e2e_runs: int = 0
    e2e_conclusive: bool | None = None

    def refused(self) -> str | None:
        return self.refusal or None


@dataclass(frozen=True)
class PullRequestRecord(StageOutcome):
    action: str  # kernelbot.propose.ProposeOutcome.action: opened, updated, skipped, refused, ...
    reason: str = ""
    number: int | None = None
    url: str | None = None
    pushed_sha: str | None = None


@dataclass(frozen=True)
class ProposeRecord(StageOutcome):
    STAGE: ClassVar[str] = "propose"

    bundle: str  # RUN/pr, relative to RUN
    branch: str
    kernel_hash: str
    title: str
    pr: PullRequestRecord | None = None  # None: no pull request was asked for (--open-pr)


RECORDS: dict[str, type[StageOutcome]] = {
    r.STAGE: r
    for r in (ExtractRecord, EvolveRecord, ConfirmRecord, IntegrateRecord, VerifyRecord, ProposeRecord)
}
