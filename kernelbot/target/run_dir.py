"""RUN/, the directory of one `kernelbot target` run: its layout, and every file in it read and written here.

    RUN/target.toml      what the run is about, each stage's status and typed outcome
                         (kernelbot.target.state.TargetState, kernelbot.target.records)
    RUN/task/            extract: the function as a Task
    RUN/search/          evolve: the search's store and its summary.json (evolution.summary)
    RUN/search.toml      evolve: the search config the run evolves with
    RUN/confirm.json     confirm: kernelbot.confirm.ConfirmReport, the only figures a proposal prints
    RUN/worktree/        integrate: a work tree of the base commit with the winning kernel put in
    RUN/.verify-trees/   verify: clean trees of the base and of the change, removed after verification
    RUN/verify/          verify: JUnit reports and logs of every test and benchmark run
    RUN/verify.json      verify: kernelbot.verify.VerifyReport
    RUN/pr/              propose: patch.diff, body.md, evidence.json, reproduce.sh (kernelbot.propose.bundle)

No other module of kernelbot spells these names (tests/layout/test_run_dir_names.py holds it to that): a
stage asks for a path or a record here. Writes are atomic, so a killed run never leaves half a file.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomli_w

from kernelbot.errors import RunStateError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from kernelbot.confirm.report import ConfirmReport
    from kernelbot.verify.report import VerifyReport

STATE_FILE = "target.toml"
TASK_DIR = "task"
SEARCH_DIR = "search"
SEARCH_CONFIG = "search.toml"
SEARCH_SUMMARY = "summary.json"  # written by evolution.summary inside RUN/search
CONFIRM_FILE = "confirm.json"
WORKTREE_DIR = "worktree"
SCRATCH_DIR = ".verify-trees"
VERIFY_LOG_DIR = "verify"
VERIFY_FILE = "verify.json"
BUNDLE_DIR = "pr"
PATCH_FILE = "patch.diff"
BODY_FILE = "body.md"
EVIDENCE_FILE = "evidence.json"
REPRODUCE_FILE = "reproduce.sh"
BUNDLE_FILES = (PATCH_FILE, EVIDENCE_FILE, BODY_FILE, REPRODUCE_FILE)
_EXECUTABLE = (REPRODUCE_FILE,)


def is_target_run(run_dir: Path) -> bool:
    return (run_dir / STATE_FILE).is_file()


def write_atomically(path: Path, text: str, *, executable: bool = False) -> None:
    """`text` to `path` through a temporary file in the same directory: a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, (0o755 if executable else 0o644) | stat.S_IRUSR)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- target.toml ------------------------------------------------------------------------------------------


def read_state_table(run_dir: Path) -> dict[str, object]:
    """RUN/target.toml as its TOML document (RunStateError: missing or unreadable)."""
    path = run_dir / STATE_FILE
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise RunStateError(f"{run_dir} holds no kernelbot target run ({STATE_FILE} is missing)") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RunStateError(f"cannot read {path}: {exc}") from exc


def write_state_table(run_dir: Path, table: Mapping[str, object]) -> None:
    write_atomically(run_dir / STATE_FILE, tomli_w.dumps(_drop_none(table)))


def _drop_none(value: Any) -> Any:
    """TOML has no null: None entries are left out (a reader treats a missing key as None)."""
    if isinstance(value, Mapping):
        return {str(k): _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_drop_none(v) for v in value if v is not None]
    return value


# --- search -----------------------------------------------------------------------------------------------


def search_dir(run_dir: Path) -> Path:
    return run_dir / SEARCH_DIR


def write_search_config(run_dir: Path, text: str) -> Path:
    """RUN/search.toml with `text`, unless the user has already written (or edited) one."""
    path = run_dir / SEARCH_CONFIG
    if not path.is_file():
        write_atomically(path, text)
    return path


# --- confirm.json -----------------------------------------------------------------------------------------


def write_confirm(run_dir: Path, report: ConfirmReport) -> str:
    """RUN/confirm.json; returns its name relative to RUN (what the confirm stage records)."""
    write_atomically(run_dir / CONFIRM_FILE, json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n")
    return CONFIRM_FILE


def read_confirm(run_dir: Path, recorded: str = CONFIRM_FILE) -> ConfirmReport:
    from kernelbot.confirm.report import ConfirmReport

    path = run_dir / recorded
    try:
        return ConfirmReport.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RunStateError(
            f"cannot read {path}: {exc}; run the confirm stage again (delete it from {STATE_FILE})"
        ) from exc


# --- verify.json ------------------------------------------------------------------------------------------


def verify_logs(run_dir: Path) -> Path:
    return run_dir / VERIFY_LOG_DIR


def verify_scratch(run_dir: Path) -> Path:
    return run_dir / SCRATCH_DIR


def verify_path(run_dir: Path) -> Path:
    return run_dir / VERIFY_FILE


def write_verify(run_dir: Path, report: VerifyReport) -> str:
    """RUN/verify.json; returns its name relative to RUN (what the verify stage records)."""
    write_atomically(run_dir / VERIFY_FILE, json.dumps(report.to_dict(), indent=2) + "\n")
    return VERIFY_FILE


def read_verify_table(run_dir: Path, recorded: str = VERIFY_FILE) -> dict[str, object]:
    """RUN/verify.json as its JSON document (kernelbot.verify.report describes it); RunStateError when it
    cannot be read."""
    path = run_dir / recorded
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise RunStateError(f"{path} is not there") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunStateError(
            f"cannot read {path}: {exc}; run the verify stage again (delete it from {STATE_FILE})"
        ) from exc
    if not isinstance(data, dict):
        raise RunStateError(f"{path} holds no JSON object")
    return data


def read_verify(run_dir: Path, recorded: str = VERIFY_FILE) -> VerifyReport:
    from kernelbot.verify.report import VerifyReport

    return VerifyReport.from_dict(read_verify_table(run_dir, recorded))


# --- pr/ --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BundleFiles:
    """The texts of RUN/pr/."""

    dir: Path
    patch: str
    evidence: str  # evidence.json (kernelbot.propose.evidence.Evidence.to_json)
    body: str
    reproduce: str = ""

    def by_name(self) -> dict[str, str]:
        return {
            PATCH_FILE: self.patch,
            EVIDENCE_FILE: self.evidence,
            BODY_FILE: self.body,
            REPRODUCE_FILE: self.reproduce,
        }


def bundle_dir(run_dir: Path) -> Path:
    return run_dir / BUNDLE_DIR


def bundle_body_path(run_dir: Path) -> Path:
    return run_dir / BUNDLE_DIR / BODY_FILE


def bundle_patch_path(run_dir: Path) -> Path:
    return run_dir / BUNDLE_DIR / PATCH_FILE


def write_bundle_files(run_dir: Path, files: BundleFiles) -> None:
    for name, text in files.by_name().items():
        write_atomically(files.dir / name, text, executable=name in _EXECUTABLE)


def read_bundle_files(run_dir: Path) -> BundleFiles:
    out = bundle_dir(run_dir)
    try:
        return BundleFiles(
            dir=out,
            patch=(out / PATCH_FILE).read_text(),
            evidence=(out / EVIDENCE_FILE).read_text(),
            body=(out / BODY_FILE).read_text(),
        )
    except (OSError, ValueError) as exc:
        raise RunStateError(f"cannot read the bundle in {out}: {exc}") from exc


def read_bundle_patch(run_dir: Path) -> str | None:
    """RUN/pr/patch.diff (None when it is not there)."""
    try:
        return bundle_patch_path(run_dir).read_text()
    except FileNotFoundError:
        return None


def bundle_evidence_path(run_dir: Path) -> Path:
    return run_dir / BUNDLE_DIR / EVIDENCE_FILE


def read_bundle_body(run_dir: Path) -> str:
    """RUN/pr/body.md (OSError when it is not there)."""
    return bundle_body_path(run_dir).read_text()


def read_bundle_evidence(run_dir: Path) -> object:
    """RUN/pr/evidence.json as its JSON document (OSError, ValueError when it cannot be read)."""
    return json.loads(bundle_evidence_path(run_dir).read_text())
