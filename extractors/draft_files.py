"""draft_spec.toml: the drafted inputs as a spec the user may edit and pass back with `--spec`.

The file records a digest of what kernelbot wrote, so an edited file is told apart from an untouched one:
kernelbot never deletes or overwrites an edited draft (nor one without a digest, written by hand or by an
older kernelbot); a fresh draft then goes next to it as draft_spec.new.toml."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from extractors.drafting.guesses import DRAFT_MARK
from extractors.input_spec import InputSpec
from extractors.toml_writer import dumps

DRAFT_FILE = "draft_spec.toml"
NEW_DRAFT_FILE = "draft_spec.new.toml"
_DIGEST = "# kernelbot-draft-sha256: "


def render_draft(spec: InputSpec) -> str:
    body = dumps(spec.to_toml_dict())
    return (
        f"{DRAFT_MARK}\n"
        "# Edit, then: kernelbot extract ... --spec draft_spec.toml\n"
        "# Arguments that change between cases read the case's key of the same name\n"
        '# (`value = "scoring_func"` is the case\'s scoring_func);\n'
        '# `when = "with_residual"` makes an argument None in the cases where with_residual is false.\n'
        f"{_DIGEST}{_digest(body)}\n" + body
    )


def is_edited(path: Path) -> bool:
    """True unless `path` is exactly what kernelbot wrote (a file without a digest counts as edited)."""
    text = path.read_text(errors="replace")
    _, marker, body = text.partition(_DIGEST)
    if not marker:
        return True
    digest, _, body = body.partition("\n")
    return digest.strip() != _digest(body)


def write_draft(directory: Path, text: str) -> Path:
    """Write a draft into `directory` without touching an edited draft_spec.toml there."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / DRAFT_FILE
    if target.exists() and is_edited(target):
        target = directory / NEW_DRAFT_FILE
    target.write_text(text)
    return target


def carry_user_drafts(old: Path, new: Path) -> str:
    """Before `old` (a task being replaced) goes: move its draft_spec.toml into `new` when it was edited, or
    when `new` brings no draft of its own. Returns a note for the summary ("" when nothing was kept)."""
    source = old / DRAFT_FILE
    if not source.is_file():
        return ""
    fresh = new / DRAFT_FILE
    if fresh.exists():
        if not is_edited(source):
            return ""
        shutil.move(str(fresh), str(new / NEW_DRAFT_FILE))
        shutil.copy2(source, fresh)
        return f"kept your edited {DRAFT_FILE}; the new draft is {NEW_DRAFT_FILE}"
    shutil.copy2(source, fresh)
    return f"kept {DRAFT_FILE}" + (" (edited)" if is_edited(source) else "")


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()
