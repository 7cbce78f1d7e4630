"""The Task contract: a directory holding task.toml, reference.py, inputs.py and optional captured/ inputs.

A Task is what extractors write and what the evaluator and the search read. Loading validates the directory
up front so that a malformed task fails with one message naming the file and the field, before any worker
starts. Importing reference.py / inputs.py (which needs torch) is deferred to `load_reference` and
`load_make_inputs` so that listing or validating tasks stays cheap.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from evaluators.errors import TaskError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

REGIMES = ("graph", "wall")
CACHE_MODES = ("hot", "cold")
TASK_FILE = "task.toml"
REFERENCE_FILE = "reference.py"
INPUTS_FILE = "inputs.py"
CAPTURED_DIR = "captured"

_module_counter = itertools.count()


@dataclass(frozen=True)
class Source:
    """Where the reference came from, so a PR can point at the original code."""

    repo: str = ""
    path: str = ""
    qualname: str = ""
    commit: str = ""


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


@dataclass(frozen=True)
class UnorderedOutputs:
    """Rows of `key` (an integer output such as top-k ids) may come in any order; `values` follow them."""

    key: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class TiedOutputs:
    """`key` holds top-k / sort indices whose order among exactly equal scores the reference leaves open.

    The scores are those of the tensor the reference's own top-k/sort ran over when the evaluator observes
    that call, else the `values` output (the values the ids select, as the reference computes them). `follow`
    names further outputs whose rows follow the ids (values gathered with them from another tensor)."""

    key: str
    values: str | None = None
    follow: tuple[str, ...] = ()

    @property
    def followers(self) -> tuple[str, ...]:
        return ((self.values,) if self.values else ()) + self.follow


@dataclass(frozen=True)
class CompareOptions:
    # Fraction of elements of an integer output allowed to differ (near-ties in top-k); 0 means exact.
    mismatch_fraction: float = 0.0
    unordered: tuple[UnorderedOutputs, ...] = ()
    ties: tuple[TiedOutputs, ...] = ()


@dataclass(frozen=True)
class Case:
    """One named shape/parameter set. `params` is handed verbatim to make_inputs."""

    name: str
    params: Mapping[str, Any]
    captured: Path | None = None  # a captured/*.pt file: fixed real inputs instead of make_inputs

    @property
    def is_captured(self) -> bool:
        return self.captured is not None


@dataclass(frozen=True)
class Task:
    root: Path
    name: str
    entry: str
    regime: str
    cases: tuple[Case, ...]
    source: Source = field(default_factory=Source)
    description: str = ""
    cache: str = "hot"
    # Case keys that vary at serving time (batch, tokens); hidden extra cases perturb them to catch
    # kernels that hard-code the listed shapes.
    dynamic: tuple[str, ...] = ()
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    compare: CompareOptions = field(default_factory=CompareOptions)
    # Arguments every correct implementation must read in full (the roofline's byte floor).
    roofline_reads: tuple[str, ...] = ()
    seeds: int | None = None

    @property
    def reference_path(self) -> Path:
        return self.root / REFERENCE_FILE

    @property
    def inputs_path(self) -> Path:
        return self.root / INPUTS_FILE

    def case(self, name: str) -> Case:
        for case in self.cases:
            if case.name == name:
                return case
        known = ", ".join(c.name for c in self.cases)
        raise TaskError(f"task {self.name!r} has no case {name!r} (cases: {known})")

    def load_reference(self) -> Callable[..., Any]:
        module = _import_file(self.reference_path, f"kb_reference_{self.name}")
        fn = getattr(module, self.entry, None)
        if not callable(fn):
            raise TaskError(f"{self.reference_path} defines no function {self.entry!r} (task.toml entry)")
        return fn

    def load_make_inputs(self) -> Callable[[dict, int, str], tuple[tuple, dict]]:
        module = _import_file(self.inputs_path, f"kb_inputs_{self.name}")
        fn = getattr(module, "make_inputs", None)
        if not callable(fn):
            raise TaskError(f"{self.inputs_path} defines no function make_inputs(case, seed, device)")
        return fn

    def make_inputs(self, case: Case, seed: int, device: str) -> tuple[tuple, dict]:
        """Build one fresh input set for `case`; captured cases ignore the seed (their values are real)."""
        pinned = _PINNED.get(self.root)
        if case.captured is not None:
            data = pinned.captured.get(case.captured) if pinned else None
            return load_captured(case.captured if data is None else data, device, shown=case.captured)
        make = pinned.make_inputs if pinned else self.load_make_inputs()
        args, kwargs = make(dict(case.params), seed, device)
        return tuple(args), dict(kwargs)

    def pin(self) -> Callable[..., Any]:
        """Load the reference, make_inputs and the captured tensors' bytes now, once, and use these for the
        rest of this process (an evaluation worker, before the candidate is imported): a candidate that
        rewrites the task's files on disk (a shared mapping raises no audit event) cannot change what it is
        compared against. Returns the reference."""
        reference = self.load_reference()
        try:
            captured = {c.captured: c.captured.read_bytes() for c in self.cases if c.captured is not None}
        except OSError as exc:
            raise TaskError(f"cannot read captured inputs: {exc}") from exc
        _PINNED[self.root] = _Pinned(self.load_make_inputs(), captured)
        return reference


@dataclass(frozen=True)
class _Pinned:
    make_inputs: Callable[[dict, int, str], tuple[tuple, dict]]
    captured: Mapping[Path, bytes]


_PINNED: dict[Path, _Pinned] = {}


def load_captured(source: Path | bytes, device: str, *, shown: Path | None = None) -> tuple[tuple, dict]:
    """The inputs in a captured/*.pt file, or in its bytes read before (`shown` names the file then)."""
    import io

    import torch

    path = shown if isinstance(source, bytes) else source
    try:
        readable = io.BytesIO(source) if isinstance(source, bytes) else source
        blob = torch.load(readable, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises many types for a bad file
        raise TaskError(f"cannot read captured inputs {path}: {exc}") from exc
    if not isinstance(blob, dict) or "args" not in blob:
        raise TaskError(f"captured inputs {path} must be a dict with 'args' (and optional 'kwargs')")
    return tuple(blob["args"]), dict(blob.get("kwargs", {}))


def spec_literals(inputs_path: Path) -> dict[str, Any]:
    """The SPEC and ORDER literals of a spec-generated inputs.py (extractors/templates/inputs_spec.py.tmpl),
    read without running it: those of the two it binds at module level to a literal, none for inputs
    written otherwise."""
    try:
        tree = ast.parse(inputs_path.read_text())
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, Any] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id in ("SPEC", "ORDER"):
            try:
                found[target.id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):  # not a literal
                continue
    return found


def _import_file(path: Path, stem: str) -> ModuleType:
    if not path.is_file():
        raise TaskError(f"missing {path}")
    name = f"{stem}_{next(_module_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise TaskError(f"{path} fails to import: {type(exc).__name__}: {exc}") from exc
    return module


def _require(table: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in table:
        raise TaskError(f"{where}: missing required field {key!r}")
    value = table[key]
    if not isinstance(value, kind):
        raise TaskError(f"{where}: field {key!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _parse_tolerances(raw: Any, where: str) -> dict[str, Tolerance]:
    if not isinstance(raw, dict):
        raise TaskError(f"{where}: [tolerance] must be a table of dtype = {{atol, rtol}}")
    out: dict[str, Tolerance] = {}
    for dtype, tol in raw.items():
        if not isinstance(tol, dict) or not {"atol", "rtol"} <= tol.keys():
            raise TaskError(f"{where}: tolerance.{dtype} needs atol and rtol")
        out[dtype] = Tolerance(float(tol["atol"]), float(tol["rtol"]))
    return out


def _parse_compare(raw: Any, where: str) -> CompareOptions:
    if not isinstance(raw, dict):
        raise TaskError(f"{where}: [compare] must be a table")
    unordered = []
    for item in raw.get("unordered", []):
        if not isinstance(item, dict) or "key" not in item:
            raise TaskError(f"{where}: each [[compare.unordered]] needs a 'key'")
        unordered.append(UnorderedOutputs(str(item["key"]), tuple(str(v) for v in item.get("values", []))))
    fraction = float(raw.get("mismatch_fraction", 0.0))
    if not 0.0 <= fraction < 0.5:
        raise TaskError(f"{where}: compare.mismatch_fraction must be in [0, 0.5)")
    ties = _parse_ties(raw.get("ties", []), where)
    return CompareOptions(mismatch_fraction=fraction, unordered=tuple(unordered), ties=ties)


_TIES_FIELDS = ("key", "values", "follow")


def _parse_ties(raw: Any, where: str) -> tuple[TiedOutputs, ...]:
    if not isinstance(raw, list):
        raise TaskError(f"{where}: compare.ties must be an array of tables ([[compare.ties]])")
    rules: list[TiedOutputs] = []
    for i, item in enumerate(raw):
        at = f"{where}: compare.ties[{i}]"
        if not isinstance(item, dict):
            raise TaskError(f"{at} must be a table with 'key' (and optional 'values', 'follow')")
        unknown = sorted(set(item) - set(_TIES_FIELDS))
        if unknown:
            raise TaskError(f"{at}: unknown field {unknown[0]!r} (known: {', '.join(_TIES_FIELDS)})")
        key = item.get("key")
        if not isinstance(key, str) or not key:
            raise TaskError(f"{at}: field 'key' must be a non-empty string naming an output")
        values = item.get("values")
        if values is not None and (not isinstance(values, str) or not values):
            raise TaskError(f"{at}: field 'values' must be a non-empty string naming an output")
        follow = item.get("follow", [])
        if not isinstance(follow, list) or not all(isinstance(f, str) and f for f in follow):
            raise TaskError(f"{at}: field 'follow' must be a list of output names")
        if key == values or key in follow:
            raise TaskError(f"{at}: field 'key' {key!r} cannot also follow itself ('values'/'follow')")
        if any(r.key == key for r in rules):
            raise TaskError(f"{at}: field 'key' {key!r} already has a [[compare.ties]] rule")
        rules.append(TiedOutputs(key, values, tuple(follow)))
    return tuple(rules)


def _parse_cases(raw: Any, where: str) -> list[Case]:
    if not isinstance(raw, list) or not raw:
        raise TaskError(f"{where}: needs at least one [[cases]] entry")
    cases = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise TaskError(f"{where}: cases[{i}] must be a table")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise TaskError(f"{where}: cases[{i}] needs a non-empty 'name'")
        params = {k: v for k, v in entry.items() if k != "name"}
        cases.append(Case(name=name, params=params))
    names = [c.name for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TaskError(f"{where}: duplicate case names {dupes}")
    return cases


def load_task(path: str | Path) -> Task:
    """Read and validate a task directory (or a path to its task.toml)."""
    root = Path(path)
    if root.name == TASK_FILE:
        root = root.parent
    if not root.exists():
        raise TaskError(f"task directory {root} does not exist")
    if not root.is_dir():
        raise TaskError(f"{root} is not a task directory (expected a folder with {TASK_FILE})")
    toml_path = root / TASK_FILE
    if not toml_path.is_file():
        raise TaskError(f"{root} has no {TASK_FILE}")
    where = str(toml_path)
    try:
        raw = tomllib.loads(toml_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{where} is not valid TOML: {exc}") from exc

    name = _require(raw, "name", str, where)
    entry = _require(raw, "entry", str, where)
    if not entry.isidentifier():
        raise TaskError(f"{where}: entry {entry!r} is not a Python identifier")
    regime = raw.get("regime", "graph")
    if regime not in REGIMES:
        raise TaskError(f"{where}: regime must be one of {REGIMES}, got {regime!r}")
    cache = raw.get("cache", "hot")
    if cache not in CACHE_MODES:
        raise TaskError(f"{where}: cache must be one of {CACHE_MODES}, got {cache!r}")
    for required in (REFERENCE_FILE, INPUTS_FILE):
        if not (root / required).is_file():
            raise TaskError(f"{root} has no {required}")

    cases = _parse_cases(raw.get("cases"), where)
    captured_dir = root / CAPTURED_DIR
    if captured_dir.is_dir():
        for pt in sorted(captured_dir.glob("*.pt")):
            cases.append(Case(name=f"captured:{pt.stem}", params={"captured": pt.name}, captured=pt))

    src = raw.get("source", {})
    if not isinstance(src, dict):
        raise TaskError(f"{where}: [source] must be a table")
    dynamic = raw.get("dynamic", [])
    if not isinstance(dynamic, list) or not all(isinstance(d, str) for d in dynamic):
        raise TaskError(f"{where}: dynamic must be a list of case keys")
    seeds = raw.get("seeds")
    if seeds is not None and (not isinstance(seeds, int) or seeds < 1):
        raise TaskError(f"{where}: seeds must be a positive integer")
    roofline = raw.get("roofline", {})
    return Task(
        root=root.resolve(),
        name=name,
        entry=entry,
        regime=regime,
        cases=tuple(cases),
        source=Source(**{k: str(v) for k, v in src.items() if k in Source.__dataclass_fields__}),
        description=str(raw.get("description", "")),
        cache=cache,
        dynamic=tuple(dynamic),
        tolerances=_parse_tolerances(raw.get("tolerance", {}), where),
        compare=_parse_compare(raw.get("compare", {}), where),
        roofline_reads=tuple(str(r) for r in roofline.get("read", [])),
        seeds=seeds,
    )
