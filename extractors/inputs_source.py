"""Where a task's inputs come from, in order: `--spec S.toml`; calls recorded by `kernelbot capture` already
in the task directory (a capture wins over any draft); else a draft made to run (extractors.drafting)."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extractors.draft_files import DRAFT_FILE, render_draft, write_draft
from extractors.drafting import DraftRefused, draft_inputs
from extractors.drafting.guesses import DRAFT_MARK
from extractors.drafting.serving_shapes import profile_for_source
from extractors.errors import ExtractionError
from extractors.input_spec import TEMPLATES, InputSpec, check_against_signature, load_spec, render_inputs
from extractors.reference_builder import BuiltReference
from extractors.signature import Param


@dataclass
class PreparedInputs:
    """inputs.py source, the named cases, and optional captured/*.pt files to copy in."""

    source: str
    cases: list[dict[str, Any]]
    origin: str  # "spec" | "draft" | "capture"
    notes: list[str] = field(default_factory=list)
    dynamic: list[str] = field(default_factory=list)
    captured_files: list[Path] = field(default_factory=list)
    extra_files: dict[str, str] = field(default_factory=dict)
    draft: dict[str, Any] = field(default_factory=dict)  # what drafting inferred: [extraction.draft]
    known_values: dict[str, Any] = field(default_factory=dict)  # plain argument values of the first case


class DraftDoesNotRun(ExtractionError):
    """Raised when no drafted assignment makes the reference run; the message has the last error and the
    assignment, and names the draft_spec.toml written for the user to edit."""


@dataclass(frozen=True)
class InputRequest:
    spec: Path | None
    out: Path
    target: str
    source: str  # the repository or release, to pick the serving profile
    profile: str | None = None
    progress: Callable[[str], None] | None = None


def prepare_inputs(
    spec_path: Path | None,
    signature: list[Param],
    built: BuiltReference,
    name: str,
    request: InputRequest | None = None,
) -> PreparedInputs:
    if spec_path is not None:
        spec = load_spec(spec_path)
        check_against_signature(spec, signature, f"--spec {spec_path}")
        return from_spec(spec, signature, name, [], "spec")
    if request is not None:
        captured = sorted((request.out / "captured").glob("*.pt"))
        if captured:
            return _from_capture(captured, built.entry)
    return _draft(signature, built, name, request)


def from_spec(
    spec: InputSpec, signature: list[Param], name: str, notes: list[str], origin: str, header: str = ""
) -> PreparedInputs:
    cases = [{"name": case_name, **params} for case_name, params in spec.expand_cases()]
    source = render_inputs(spec, signature, name, header)
    prepared = PreparedInputs(source, cases, origin, notes, spec.dynamic_sizes())
    prepared.known_values = _known_values(spec, signature)
    return prepared


def _from_capture(files: list[Path], entry: str) -> PreparedInputs:
    """Re-extraction of a captured task: its recorded calls stay its inputs."""
    source = (TEMPLATES / "inputs_capture.py.tmpl").read_text().replace("{{TASK}}", entry)
    cases = [{"name": f.stem, "call": f.stem} for f in files]
    notes = [f"{f.stem}: replayed from captured/{f.name} (a capture wins over a draft)" for f in files]
    return PreparedInputs(source, cases, "capture", notes, captured_files=list(files))


def _draft(
    signature: list[Param], built: BuiltReference, name: str, request: InputRequest | None
) -> PreparedInputs:
    source = request.source if request is not None else ""
    profile = (request.profile if request is not None else None) or profile_for_source(source)
    progress = request.progress if request is not None else None
    try:
        drafted = draft_inputs(built.source, built.entry, signature, built.init_hints, profile, progress)
    except DraftRefused as refused:
        failure = refused.failure
        where = ""
        if request is not None and failure.spec is not None:
            where = str(write_draft(request.out, render_draft(failure.spec)))
        target = request.target if request is not None else built.entry
        raise DraftDoesNotRun(
            f"refused {target}: no drafted inputs make its reference run ({failure.attempts} attempts); "
            f"last error (case {failure.case!r}): {failure.error}; inferred: {'; '.join(failure.assignment)}"
            + (f"; edit {where} and pass it with --spec" if where else "")
        ) from None
    header = (
        f"{DRAFT_MARK}\n# Drafted from how the code uses each argument; edit {DRAFT_FILE}, or pass --spec.\n"
    )
    prepared = from_spec(drafted.spec, signature, name, drafted.inferred, "draft", header)
    prepared.extra_files[DRAFT_FILE] = render_draft(drafted.spec)
    prepared.draft = drafted.record
    return prepared


def _known_values(spec: InputSpec, signature: list[Param]) -> dict[str, Any]:
    """Literal defaults and plain spec values of the first case (for `sorted=` expressions and the like)."""
    known: dict[str, Any] = {}
    for param in signature:
        if param.default is not None:
            with contextlib.suppress(ValueError, SyntaxError):
                known[param.name] = ast.literal_eval(param.default)
    first = spec.expand_cases()[0][1] if spec.expand_cases() else {}
    for arg, table in spec.args.items():
        if "value" in table:
            value = table["value"]
            if isinstance(value, str):
                value = first.get(value, None)
            if isinstance(value, (int, float, bool, str)):
                known[arg] = value
        elif "text" in table:
            known[arg] = table["text"]
        elif "none" in table:
            known[arg] = None
    return known
