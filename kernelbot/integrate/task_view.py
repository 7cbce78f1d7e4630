"""What integration reads from a task directory: the Task contract (cases, dynamic keys, tolerances, source)
plus the extractor's notes in task.toml [extraction] (how a method's `self.<attr>` became parameters and
extra outputs), the reference entry's signature and what its return statements return by name, and the
input spec a spec-generated inputs.py holds."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libcst as cst

from evaluators.errors import TaskError
from evaluators.task import Task, load_task, spec_literals
from extractors.errors import ExtractionError
from extractors.signature import Param, entry_signature
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.gather_returned_names import GatherReturnedNamesVisitor

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class InputSpecSource:
    """SPEC and ORDER of a spec-generated inputs.py (see extractors/templates/inputs_spec.py.tmpl)."""

    spec: dict[str, dict[str, Any]]
    order: list[tuple[str, str]]  # (parameter, "positional" | "keyword")


@dataclass(frozen=True)
class TaskView:
    task: Task
    signature: tuple[Param, ...]  # the reference entry's parameters
    attribute_params: dict[str, str]  # self.<attr> -> entry parameter (methods only)
    bound_callables: dict[str, str]  # self.<attr> -> module-level function it holds (methods only)
    outputs: tuple[str, ...]  # "return" and/or "self.<attr>" in the order the entry returns them
    mutated: tuple[str, ...]  # arguments the reference writes in place
    inputs: InputSpecSource | None  # None: hand-written or captured inputs
    # Per return statement of the entry, the name it returns at each position (None: not a plain name).
    returned: tuple[tuple[str | None, ...], ...]

    @property
    def root(self) -> Path:
        return self.task.root

    @property
    def qualname(self) -> str:
        return self.task.source.qualname

    @property
    def is_method(self) -> bool:
        return "." in self.qualname

    @property
    def written_attributes(self) -> tuple[str, ...]:
        return tuple(o.removeprefix("self.") for o in self.outputs if o.startswith("self."))

    def param(self, name: str) -> Param:
        for param in self.signature:
            if param.name == name:
                return param
        raise IntegrationError(f"{self.task.reference_path}: the entry has no parameter {name!r}")


def load_view(task_dir: Path) -> TaskView:
    try:
        task = load_task(Path(task_dir))
    except TaskError as exc:
        raise IntegrationError(str(exc)) from exc
    if not task.source.path or not task.source.qualname:
        raise IntegrationError(f"{task.root}/task.toml has no [source] path and qualname to integrate into")
    raw = tomllib.loads((task.root / "task.toml").read_text())
    extraction = raw.get("extraction", {})
    reference = task.reference_path.read_text()
    try:
        signature = entry_signature(reference, task.entry)
    except ExtractionError as exc:
        raise IntegrationError(f"{task.reference_path}: {exc}") from exc
    try:
        returned = tuple(GatherReturnedNamesVisitor.of(reference, task.entry))
    except cst.ParserSyntaxError:  # Python that LibCST's grammar lacks: the names are a nicety
        returned = ()
    mutated = extraction.get("mutated_args_observed", extraction.get("mutated_args_static", []))
    return TaskView(
        task=task,
        signature=tuple(signature),
        attribute_params=dict(extraction.get("attribute_params", {})),
        bound_callables=dict(extraction.get("bound_callables", {})),
        outputs=tuple(extraction.get("outputs", ["return"])),
        mutated=tuple(mutated),
        inputs=_input_spec(task.inputs_path),
        returned=returned,
    )


def _input_spec(path: Path) -> InputSpecSource | None:
    """SPEC/ORDER literals of a spec-generated inputs.py, read without running it."""
    found = spec_literals(path)
    if set(found) != {"SPEC", "ORDER"}:
        return None
    return InputSpecSource(found["SPEC"], [tuple(o) for o in found["ORDER"]])
