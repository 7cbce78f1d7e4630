"""RUN/target.toml: what a `kernelbot target` run is about and how far it got.

    schema = 1
    profile = "example"
    function = "minisglang.layers.activation:SiluAndMul.forward_native"
    created_at = 1764583742.1
    [repo]            where the change is made: source (as given), path (relative to RUN when under it),
                      base_commit, branch
    [stages.extract]  status = "done" | "failed" | "running", started_at, finished_at, error, [outcome]
    ...               (extract, evolve, confirm, integrate, verify, propose)

The file is rewritten whole, atomically (kernelbot.target.run_dir), whenever a stage starts or ends, so a
killed run leaves the last consistent state: a stage not `done` is unfinished and runs again (the evolve
stage then resumes its own store). Each outcome is its stage's typed record (kernelbot.target.records),
holding only what the later stages and people need (paths relative to RUN, ids, counts, the verdicts);
never a token or an API key.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelbot.errors import RunStateError
from kernelbot.target.records import R, StageOutcome
from kernelbot.target.run_dir import STATE_FILE, read_state_table, write_state_table

SCHEMA = 1
STAGES = ("extract", "evolve", "confirm", "integrate", "verify", "propose")
DONE, FAILED, RUNNING = "done", "failed", "running"


@dataclass
class StageRecord:
    status: str
    started_at: float
    finished_at: float | None = None
    error: str = ""
    outcome: Mapping[str, object] = field(default_factory=dict)  # the stage's record, as its TOML table

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"status": self.status, "started_at": self.started_at}
        if self.finished_at is not None:
            data["finished_at"] = self.finished_at
        if self.error:
            data["error"] = self.error
        data["outcome"] = dict(self.outcome)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageRecord:
        return cls(
            status=str(data["status"]),
            started_at=float(data["started_at"]),
            finished_at=data.get("finished_at"),
            error=str(data.get("error", "")),
            outcome=dict(data.get("outcome", {})),
        )


@dataclass(frozen=True)
class RepoRecord:
    """The repository the change is made against: as the user named it, where it is, and the base commit."""

    source: str  # "example", a path, a URL, or pypi:NAME==VERSION
    path: str  # relative to RUN when under it, else absolute
    base_commit: str
    branch: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "source": self.source,
            "path": self.path,
            "base_commit": self.base_commit,
            "branch": self.branch,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RepoRecord:
        return cls(
            str(data["source"]), str(data["path"]), str(data["base_commit"]), str(data.get("branch", ""))
        )


@dataclass
class TargetState:
    run_dir: Path
    profile: str
    function: str
    repo: RepoRecord
    created_at: float = field(default_factory=time.time)
    stages: dict[str, StageRecord] = field(default_factory=dict)

    # --- reading and writing --------------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self.run_dir / STATE_FILE

    @classmethod
    def load(cls, run_dir: Path) -> TargetState:
        path = run_dir / STATE_FILE
        data: Mapping[str, Any] = read_state_table(run_dir)
        if data.get("schema") != SCHEMA:
            raise RunStateError(f"{path} has schema {data.get('schema')!r}; this kernelbot reads {SCHEMA}")
        try:
            stages = {name: StageRecord.from_dict(rec) for name, rec in data.get("stages", {}).items()}
            return cls(
                run_dir=run_dir,
                profile=str(data["profile"]),
                function=str(data["function"]),
                repo=RepoRecord.from_dict(data["repo"]),
                created_at=float(data["created_at"]),
                stages=stages,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RunStateError(f"{path} is incomplete or malformed ({exc})") from exc

    def save(self) -> None:
        data = {
            "schema": SCHEMA,
            "profile": self.profile,
            "function": self.function,
            "created_at": self.created_at,
            "repo": self.repo.to_dict(),
            "stages": {name: self.stages[name].to_dict() for name in STAGES if name in self.stages},
        }
        write_state_table(self.run_dir, data)

    # --- stages ---------------------------------------------------------------------------------------------

    def is_done(self, stage: str) -> bool:
        record = self.stages.get(stage)
        return record is not None and record.status == DONE

    def first_unfinished(self) -> str | None:
        return next((s for s in STAGES if not self.is_done(s)), None)

    def outcome(self, stage: str) -> Mapping[str, object]:
        """The outcome of a finished stage as target.toml holds it (RunStateError when it has not finished:
        a kernelbot bug)."""
        if not self.is_done(stage):
            raise RunStateError(f"{self.path}: stage {stage!r} has not finished")
        return self.stages[stage].outcome

    def record(self, kind: type[R], stage: str = "") -> R:
        """The typed outcome of the finished stage `stage` (by default `kind.STAGE`); RunStateError when it
        has not finished, or when target.toml's table does not make that record."""
        stage = stage or kind.STAGE
        try:
            return kind.from_table(self.outcome(stage))
        except (KeyError, TypeError, ValueError) as exc:
            raise RunStateError(f"{self.path}: the {stage} outcome is malformed ({exc})") from exc

    def started(self, stage: str) -> None:
        self.stages[stage] = StageRecord(RUNNING, time.time())
        self.save()

    def finished(self, stage: str, outcome: StageOutcome) -> None:
        table = outcome.to_table()
        self.stages[stage] = StageRecord(DONE, self._started_at(stage), time.time(), outcome=table)
        self.save()

    def failed(self, stage: str, error: str) -> None:
        record = StageRecord(FAILED, self._started_at(stage), time.time(), error=error)
        self.stages[stage] = record
        self.save()

    def _started_at(self, stage: str) -> float:
        record = self.stages.get(stage)
        return record.started_at if record is not None else time.time()

    def relative(self, path: Path) -> str:
        """`path` relative to RUN when it lies under it (the run directory can then move), else absolute."""
        resolved = path.resolve()
        try:
            return resolved.relative_to(self.run_dir.resolve()).as_posix()
        except ValueError:
            return str(resolved)

    def resolve(self, stored: str) -> Path:
        """A path as `relative` stored it, made usable again."""
        path = Path(stored)
        return path if path.is_absolute() else self.run_dir / path
