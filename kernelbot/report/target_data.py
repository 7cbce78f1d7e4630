"""A `kernelbot target` run as the report sees it: RUN/target.toml (stages), RUN/verify.json (tests and the
end-to-end benchmark) and the bundle in RUN/pr/ (body.md, evidence.json), each read through
kernelbot.target.run_dir as its plain document.

These documents are read by their documented shapes (docs/target.md) rather than as the typed records the
stages keep, so a report renders whatever part of a run exists, even one a stage left half-written: a file
that is missing or unreadable becomes a reason the section shows, never an error of the whole report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelbot.errors import RunStateError
from kernelbot.target import run_dir as layout
from kernelbot.target.state import STAGES


@dataclass(frozen=True)
class StageRow:
    name: str
    status: str  # "done" | "failed" | "running" | "not started"
    started_at: float | None = None
    finished_at: float | None = None
    error: str = ""
    outcome: Mapping[str, Any] = field(default_factory=dict)  # the stage's record as target.toml holds it


@dataclass(frozen=True)
class Loaded:
    """A file's content, or why there is none."""

    value: Any = None
    missing: str = ""


@dataclass(frozen=True)
class TargetData:
    run_dir: Path
    state: Loaded  # the parsed target.toml
    stages: tuple[StageRow, ...]
    verify: Loaded  # the parsed verify.json
    body: Loaded  # body.md's text
    evidence: Loaded  # the parsed evidence.json

    def stage(self, name: str) -> StageRow:
        return next((s for s in self.stages if s.name == name), StageRow(name, "not started"))

    @property
    def profile(self) -> str:
        return str((self.state.value or {}).get("profile", ""))

    @property
    def function(self) -> str:
        return str((self.state.value or {}).get("function", ""))

    @property
    def repo(self) -> Mapping[str, Any]:
        repo = (self.state.value or {}).get("repo")
        return repo if isinstance(repo, dict) else {}


def is_target_run(run_dir: Path) -> bool:
    return layout.is_target_run(run_dir)


def load_target(run_dir: Path) -> TargetData:
    state = _read(lambda: layout.read_state_table(run_dir))
    stages = _stages(state.value or {})
    verify, body, evidence = (
        layout.verify_path(run_dir),
        layout.bundle_body_path(run_dir),
        layout.bundle_evidence_path(run_dir),
    )
    return TargetData(
        run_dir=run_dir,
        state=state,
        stages=stages,
        verify=_read_or_explain(
            verify, lambda: layout.read_verify_table(run_dir), _why_not(stages, "verify", run_dir, verify)
        ),
        body=_read_or_explain(
            body, lambda: layout.read_bundle_body(run_dir), _why_not(stages, "propose", run_dir, body)
        ),
        evidence=_read_or_explain(
            evidence,
            lambda: layout.read_bundle_evidence(run_dir),
            _why_not(stages, "propose", run_dir, evidence),
        ),
    )


def _stages(state: Mapping[str, Any]) -> tuple[StageRow, ...]:
    stages = state.get("stages")
    recorded = stages if isinstance(stages, dict) else {}
    rows = []
    for name in STAGES:
        rec = recorded.get(name)
        if not isinstance(rec, dict):
            rows.append(StageRow(name, "not started"))
            continue
        rows.append(
            StageRow(
                name=name,
                status=str(rec.get("status", "?")),
                started_at=_float(rec.get("started_at")),
                finished_at=_float(rec.get("finished_at")),
                error=str(rec.get("error", "")),
                outcome=outcome if isinstance(outcome := rec.get("outcome"), dict) else {},
            )
        )
    return tuple(rows)


def _why_not(stages: tuple[StageRow, ...], stage: str, run_dir: Path, path: Path) -> str:
    row = next(s for s in stages if s.name == stage)
    file = path.relative_to(run_dir).as_posix()
    if row.status == "not started":
        return f"{file} is not there: the {stage} stage has not run yet"
    if row.status == "running":
        return (
            f"{file} is not there yet: the {stage} stage was running when the run last wrote "
            f"{layout.STATE_FILE}"
        )
    if row.status == "failed":
        return f"{file} is not there: the {stage} stage failed ({row.error or 'no reason recorded'})"
    return f"{file} is not there, although {layout.STATE_FILE} records the {stage} stage as {row.status}"


def _read_or_explain(path: Path, read: Callable[[], object], reason: str) -> Loaded:
    if not path.is_file():
        return Loaded(missing=reason)
    return _read(read, path.name)


def _read(read: Callable[[], object], name: str = layout.STATE_FILE) -> Loaded:
    try:
        return Loaded(read())
    except FileNotFoundError:
        return Loaded(missing=f"{name} is not there")
    except RunStateError as exc:  # run_dir's reason, which names the file
        return Loaded(missing=str(exc))
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # JSON decode errors are ValueErrors
        return Loaded(missing=f"{name} cannot be read: {exc}")


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
