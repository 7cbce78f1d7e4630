"""From `--repo R --function F` to a Task directory: locate, close over, emit reference.py, build inputs
(a spec, captured calls, or a draft made to run), write task.toml (with the compare rules the code implies),
then run the reference once to confirm its in-place writes and refuse degenerate tasks."""

from __future__ import annotations

import re
import shutil
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluators.errors import DegenerateTaskError
from evaluators.task import REGIMES
from extractors.closure import DEPENDENCY_BUDGET, NeedsFullParse
from extractors.closure_estimate import ClosureEstimate
from extractors.draft_files import carry_user_drafts
from extractors.emit_reference import Provenance
from extractors.errors import ExtractionError
from extractors.gather_inplace_writes import inplace_writes
from extractors.gather_tied_outputs import TieRule, tied_outputs
from extractors.gather_unordered_outputs import UnorderedRule, unordered_outputs
from extractors.inputs_source import InputRequest, PreparedInputs, prepare_inputs
from extractors.probe import ProbeResult, probe_task
from extractors.reference_builder import BuiltReference, build_reference
from extractors.release_sources import fetch_release
from extractors.repo_index import RepoIndex
from extractors.signature import entry_signature
from extractors.source_info import source_info
from extractors.target import Located, TargetSpec, find_target, locate_in
from extractors.toml_writer import dumps

__all__ = ["ExtractOptions", "ExtractionSummary", "PreparedInputs", "build", "extract", "prepare_inputs"]


@dataclass
class ExtractOptions:
    repo: Path
    function: str
    out: Path | None = None
    spec: Path | None = None
    # None: graph (decode steps run in CUDA graphs), or wall when the probe finds an input the task keeps on
    # the CPU (a replay would not redo the host code that reads it); a measured graph (regime_from set)
    # yields to such an input too, a named one does not
    regime: str | None = None
    regime_from: str = ""  # where the regime comes from (a scan's measurement); "" -> the flag or default
    name: str | None = None
    probe: bool = True
    force: bool = False
    device: str = "cpu"
    profile: str | None = None  # serving-shape profile for drafts (default: from the repository's name)
    progress: Callable[[str], None] | None = None  # told what each draft repair changes


@dataclass
class ExtractionSummary:
    task_dir: Path
    name: str
    entry: str
    target: str
    commit: str
    built: BuiltReference
    inputs_source: str
    input_notes: list[str] = field(default_factory=list)
    inplace: dict[str, list[str]] = field(default_factory=dict)
    probe: ProbeResult | None = None
    draft: dict[str, Any] = field(default_factory=dict)  # what drafting inferred ([extraction.draft])
    unordered: list[UnorderedRule] = field(default_factory=list)  # [[compare.unordered]] written
    ties: list[TieRule] = field(default_factory=list)  # [[compare.ties]] written
    kept: str = ""  # a draft_spec.toml of the replaced task that was kept
    regime_from: str = ""  # where the task's regime comes from


def build(repo: Path, function: str) -> tuple[RepoIndex, Located, BuiltReference, str]:
    """Locate and close over the target; returns the built reference and the source commit/release.

    Modules are parsed slimmed to what a fast stdlib-`ast` estimate says the closure may touch; when the
    estimate missed something, that module is parsed whole and the closure is built again."""
    index = RepoIndex(resolve_repo(repo))
    ref, qualname = find_target(index, TargetSpec.parse(function))
    index.plan(ClosureEstimate(index).needed(ref, qualname.split(".")[0], DEPENDENCY_BUDGET))
    info = source_info(index.root)
    commit = info.commit + (" (uncommitted changes)" if info.dirty else "")
    for _ in range(12):
        located = locate_in(index, ref, qualname)
        provenance = Provenance(info.repo, index.relpath(ref.path), qualname, commit)
        try:
            return index, located, build_reference(index, located, provenance), info.commit
        except NeedsFullParse as exc:
            index.reparse_full(exc.path)  # type: ignore[arg-type]
    raise ExtractionError(f"could not settle which modules {function} needs (kernelbot bug?)")


def resolve_repo(repo: Path | str) -> Path:
    """A directory, or `pypi:name==version`: a release downloaded and unpacked into the source cache."""
    text = str(repo)
    if text.startswith("pypi:"):
        return fetch_release(text.removeprefix("pypi:"))
    return Path(repo)


def extract(options: ExtractOptions, inputs: PreparedInputs | None = None) -> ExtractionSummary:
    if options.regime is not None and options.regime not in REGIMES:
        raise ExtractionError(f"--regime must be one of {', '.join(REGIMES)}, got {options.regime!r}")
    if options.name is not None and not _TASK_NAME.fullmatch(options.name):
        raise ExtractionError(
            f"--name {options.name!r}: a task name is letters, digits and _ . - (no path), e.g. rmsnorm_fwd"
        )
    index, located, built, commit = build(options.repo, options.function)
    name = options.name or _task_name(built.entry)
    out = (options.out or Path("tasks") / name).resolve()
    if (out / "task.toml").exists() and not options.force:
        raise ExtractionError(f"{out} already holds a task; pass --force to overwrite it or choose --out")
    signature = entry_signature(built.source, built.entry)
    target = f"{located.ref.name}:{located.definition.qualname}"
    if inputs is None:
        request = InputRequest(
            options.spec, out, target, f"{index.root} {commit}", options.profile, options.progress
        )
        inputs = prepare_inputs(options.spec, signature, built, name, request)
    summary = ExtractionSummary(
        task_dir=out,
        name=name,
        entry=built.entry,
        target=target,
        commit=commit,
        built=built,
        inputs_source=inputs.origin,
        input_notes=inputs.notes,
        inplace=inplace_writes(built.source, built.entry),
        draft=inputs.draft,
        unordered=unordered_outputs(built.source, built.entry, inputs.known_values),
        ties=tied_outputs(built.source, built.entry, inputs.known_values),
    )
    source = {
        "repo": built_repo(index),
        "path": index.relpath(located.ref.path),
        "qualname": located.definition.qualname,
        "commit": commit,
    }
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out.parent if out.parent.exists() else None))
    regime = options.regime or "graph"
    try:
        summary.regime_from = options.regime_from or (
            "--regime" if options.regime else "default (graph: decode steps run in CUDA graphs)"
        )
        _write_task(staging, summary, inputs, regime, source)
        if options.probe:
            summary.probe = probe_task(staging, signature, options.device)
            # A scan's graph measurement yields too: the region ran in graphs in the engine, but the
            # task's call reads a CPU input in host code, which a replay of it would skip.
            measured_graph = options.regime == "graph" and bool(options.regime_from)
            if summary.probe.host and (options.regime is None or measured_graph):
                measured = options.regime_from if measured_graph else ""
                regime, summary.regime_from = "wall", _host_regime_from(summary.probe.host, measured)
            (staging / "task.toml").write_text(_task_toml(summary, inputs, regime, source))
        if summary.probe is not None and summary.probe.degenerate:
            hint = ""
            if inputs.origin == "capture":
                hint = (
                    " (captured integer and boolean tensors are replayed as recorded, since their values "
                    "carry invariants; when a function takes nothing else, describe its inputs with "
                    "`kernelbot extract --spec`)"
                )
            raise DegenerateTaskError(f"refused {summary.target}: {summary.probe.degenerate}{hint}")
        if summary.probe is not None and not summary.probe.ran and inputs.origin == "draft":
            # the drafted inputs ran in the trials; a task whose reference fails on them is never written
            raise ExtractionError(
                f"refused {summary.target}: its reference fails on the drafted inputs of case "
                f"{summary.probe.case!r}: {summary.probe.error}"
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            summary.kept = carry_user_drafts(out, staging)
            shutil.rmtree(out)
        shutil.move(str(staging), str(out))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    probe = summary.probe
    if probe is not None and not probe.ran and inputs.origin != "draft":
        raise ExtractionError(
            f"wrote {out}, but its reference fails on the {inputs.origin} inputs of case {probe.case!r}: "
            f"{probe.error}"
        )
    return summary


def _host_regime_from(host: list[str], measured: str = "") -> str:
    """Why a task with inputs kept on the CPU is timed wall; `measured`: the graph measurement it
    overrides (a scan's)."""
    names = ", ".join(host)
    why = (
        f"an input kept on the CPU ({names}): host code reads it, which a CUDA graph replay would not "
        "redo, so the call is timed as it runs, eagerly"
    )
    return f"{why} (over the {measured})" if measured else f"default for {why}"


def built_repo(index: RepoIndex) -> str:
    return source_info(index.root).repo


def _write_task(
    root: Path, summary: ExtractionSummary, inputs: PreparedInputs, regime: str, source: dict[str, str]
) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "reference.py").write_text(summary.built.source)
    (root / "inputs.py").write_text(inputs.source)
    for filename, text in inputs.extra_files.items():
        (root / filename).write_text(text)
    if inputs.captured_files:
        captured = root / "captured"
        captured.mkdir(exist_ok=True)
        for path in inputs.captured_files:
            shutil.copy2(path, captured / path.name)
    (root / "task.toml").write_text(_task_toml(summary, inputs, regime, source))


def _task_toml(
    summary: ExtractionSummary, inputs: PreparedInputs, regime: str, source: dict[str, str]
) -> str:
    built = summary.built
    report = built.report
    data: dict[str, Any] = {
        "name": summary.name,
        "entry": summary.entry,
        "regime": regime,
        "description": f"Extracted by kernelbot from {summary.target} ({inputs.origin} inputs).",
        "dynamic": inputs.dynamic,
        "source": source,
        "extraction": {
            "inputs": inputs.origin,
            "regime_from": summary.regime_from,
            "outputs": built.outputs,
            "attribute_params": built.attribute_params,
            "bound_callables": built.bound_callables,
            "closed_over": report.closed_over,
            "kept_imports": report.imports,
            "stubs": report.stubs,
            "decorators": report.decorators,
            "mutated_args_static": sorted(summary.inplace),
            "inplace_evidence": {k: v for k, v in sorted(summary.inplace.items())},
        },
        "cases": inputs.cases,
    }
    if summary.probe is not None:
        data["extraction"]["mutated_args_observed"] = summary.probe.mutated
        data["extraction"]["probe"] = "ok" if summary.probe.ran else f"failed: {summary.probe.error}"
    if summary.draft:
        data["extraction"]["draft"] = summary.draft
    compare, compare_comment = _compare_rules(summary)
    if compare:
        data["compare"] = compare
        data = {k: data[k] for k in [*[k for k in data if k != "cases"], "cases"]}
    comments = {
        "extraction": "Written by `kernelbot extract` for people and tools; the evaluator does not read it.",
        "extraction.draft": "How the inputs were drafted: what each argument was taken to be, and why.",
        "compare": compare_comment,
        "cases": "Named cases: make_inputs(case, seed, device) receives these keys.",
    }
    return dumps(data, comments)


def _compare_rules(summary: ExtractionSummary) -> tuple[dict[str, Any], str]:
    """The `[compare]` table the reference's code implies, and the comment that says why."""
    compare: dict[str, Any] = {}
    said = []
    if summary.unordered:
        compare["unordered"] = [{"key": r.key, "values": r.values} for r in summary.unordered]
        said.append(
            "Rows of the unordered outputs come in no fixed order in the reference ("
            + "; ".join(sorted({r.why for r in summary.unordered}))
            + "): compared as sets, the values follow their keys."
        )
    if summary.ties:
        compare["ties"] = [_tie_table(r) for r in summary.ties]
        said.append(
            "The tied ids come from "
            + ", ".join(sorted({r.why for r in summary.ties}))
            + ", which orders exactly equal scores as its kernel likes: ids may differ from the reference's "
            "only among exactly equal scores."
        )
    return compare, "\n".join(textwrap.wrap(" ".join(said), 106))


def _tie_table(rule: TieRule) -> dict[str, Any]:
    table: dict[str, Any] = {"key": rule.key}
    if rule.values:
        table["values"] = rule.values
    if rule.follow:
        table["follow"] = rule.follow
    return table


# A task name is also a directory name (tasks/<name>) and a module-name stem: no separators, no "..".
_TASK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def _task_name(entry: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", entry).strip("_") or "task"
