"""A `kernelbot target` run as the report sees it: RUN/target.toml (stages), RUN/verify.json (tests and the
end-to-end benchmark) and the bundle in RUN/pr/ (body.md, evidence.json), each read as plain data.

These files are read by their documented shapes (docs/target.md) rather than through the classes that write
them, so a report renders whatever part of a run exists: a file that is missing or unreadable becomes a
reason the section shows, never an error of the whole report.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

STATE_FILE = "target.toml"
VERIFY_FILE = "verify.json"
SEARCH_DIR = "search"
BUNDLE_DIR = "pr"
BODY_FILE = "body.md"
EVIDENCE_FILE = "evidence.json"
STAGES = ("extract", "evolve", "confirm", "integrate", "verify", "propose")


@dataclass(frozen=True)
class StageRow:
    name: str
    status: str  # "done" | "failed" | "running" | "not started"
    started_at: float | None = None
    finished_at: float | None = None
    error: str = ""
    outcome: dict[str, Any] = field(default_factory=dict)


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
    def repo(self) -> dict[str, Any]:
        repo = (self.state.value or {}).get("repo")
        return repo if isinstance(repo, dict) else {}


def is_target_run(run_dir: Path) -> bool:
    return (run_dir / STATE_FILE).is_file()


def load_target(run_dir: Path) -> TargetData:
    state = _read(run_dir / STATE_FILE, tomllib.loads, "target.toml")
    stages = _stages(state.value or {})
    return TargetData(
        run_dir=run_dir,
        state=state,
        stages=stages,
        verify=_read_or_explain(run_dir / VERIFY_FILE, json.loads, _why_not(stages, "verify", VERIFY_FILE)),
        body=_read_or_explain(
            run_dir / BUNDLE_DIR / BODY_FILE, str, _why_not(stages, "propose", "pr/body.md")
        ),
        evidence=_read_or_explain(
            run_dir / BUNDLE_DIR / EVIDENCE_FILE, json.loads, _why_not(stages, "propose", "pr/evidence.json")
        ),
    )


def _stages(state: dict[str, Any]) -> tuple[StageRow, ...]:
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


def _why_not(stages: tuple[StageRow, ...], stage: str, file: str) -> str:
    row = next(s for s in stages if s.name == stage)
    if row.status == "not started":
        return f"{file} is not there: the {stage} stage has not run yet"
    if row.status == "running":
        return f"{file} is not there yet: the {stage} stage was running when the run last wrote target.toml"
    if row.status == "failed":
        return f"{file} is not there: the {stage} stage failed ({row.error or 'no reason recorded'})"
    return f"{file} is not there, although target.toml records the {stage} stage as {row.status}"


def _read_or_explain(path: Path, parse: Any, reason: str) -> Loaded:
    if not path.is_file():
        return Loaded(missing=reason)
    return _read(path, parse, path.name)


def _read(path: Path, parse: Any, name: str) -> Loaded:
    try:
        return Loaded(parse(path.read_text()))
    except FileNotFoundError:
        return Loaded(missing=f"{name} is not there")
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # JSON and TOML decode errors are ValueErrors
        return Loaded(missing=f"{name} cannot be read: {exc}")


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
