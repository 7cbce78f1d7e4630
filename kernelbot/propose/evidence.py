"""The Evidence schema: every number a proposal's body shows and where it came from (RUN/pr/evidence.json).

The body is rendered from this value alone and computes nothing: percentages, speedups, confidence bounds
and the "claimed" flags are decided when the evidence is built (kernelbot.propose.collect) from the search
store, verify.json and the integration; the template only formats them. `Evidence.to_json()` /
`Evidence.from_json()` round-trip exactly; `schema` says which layout a file has.

    Evidence
     ├── op              slug, function, profile, kernel_hash, title
     ├── repo            url, base_sha, branch
     ├── environment     gpu, driver, torch, triton, python, runtime, backend, kernelbot
     ├── motivation      share_of_time_pct | None, source (where it was measured, or why it was not)
     ├── modifications   files, kernel_module, test_file, envelope (one line per condition)
     ├── accuracy        cases (errors vs tolerance), seeds_per_case, hidden_cases, dynamic_keys, precision
     ├── microbenchmarks measured | reason; the baseline columns (eager, compile, current path: available or
     │                   why not); per case and regime and column, from the confirmation's fresh processes
     │                   (RUN/confirm.json, never the search): pooled speedup, bound, processes, CV, verdict
     ├── tests           command, files, before/after counts, new / pre-existing failures, fixed
     ├── e2e             measured | reason; command, metric, both sides' samples, means, CV, delta %, CI,
     │                   claimed
     ├── provenance      operators, models, iterations, evaluations, tokens, cost_usd, search_s
     ├── human_steps     what a person still has to do upstream (labels, CLA)
     └── reproduce       one command line
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernelbot.errors import RunStateError

EVIDENCE_SCHEMA = 2
CONFIDENCE_PCT = 95  # the end-to-end interval is a 95 % one (verify's)


@dataclass(frozen=True)
class OpEvidence:
    slug: str
    function: str  # module:qualname in the target repo
    profile: str
    kernel_hash: str  # sha256 of the winning candidate's source
    title: str


@dataclass(frozen=True)
class RepoEvidence:
    url: str
    base_sha: str
    branch: str  # the upstream branch the PR targets
    # The upstream tag whose sources the base commit holds (a pypi: release imported as one commit, whose
    # sha upstream does not have); empty when the base commit is upstream's own.
    base_ref: str = ""


@dataclass(frozen=True)
class EnvironmentEvidence:
    gpu: str  # device name ("cpu" for the interpreter)
    driver: str
    torch: str
    triton: str
    python: str
    runtime: str  # CUDA / HIP / MACA version
    backend: str  # evaluator backend: triton-cuda, triton-interpret, maca
    kernelbot: str


@dataclass(frozen=True)
class MotivationEvidence:
    share_of_time_pct: float | None  # the region's share of the profiled program's time, when measured
    source: str  # what was profiled, or why nothing was


@dataclass(frozen=True)
class ModificationsEvidence:
    files: tuple[str, ...]  # every file the patch touches, relative to the repo root
    kernel_module: str
    test_file: str
    envelope: tuple[str, ...]  # the conditions under which the kernel runs (else the original path)
    formatter: str = ""  # the tools the files were formatted with and where their pins came from
    # The engine's slot for the kernel (kernelbot.engines.convention.Wiring): where it went, whether the
    # engine selects it by itself and why (or why not), whether the call is in a torch.compile region.
    slot: str = ""
    auto_selected: bool = False
    selection: str = ""
    in_compile_region: bool = False
    bench_file: str = ""  # the benchmark script the patch adds (eager, torch.compile, kernel on a GPU)


@dataclass(frozen=True)
class AccuracyCase:
    name: str
    params: dict[str, object]  # the case's parameters, as the task names them
    dtype: str
    passed: bool
    max_abs_error: float | None
    max_rel_error: float | None
    atol: float | None
    rtol: float | None
    hidden: bool = False  # a perturbed shape the evaluator drew, not listed in the task
    skipped: str = ""


@dataclass(frozen=True)
class AccuracyEvidence:
    cases: tuple[AccuracyCase, ...]
    seeds_per_case: int  # random inputs per case, drawn fresh by the evaluator (never stored)
    hidden_cases: int
    dynamic_keys: tuple[str, ...]
    reference_precision: str  # "float64" or "native"


@dataclass(frozen=True)
class ColumnFigure:
    """The kernel against one baseline column in one case and regime, over fresh processes
    (kernelbot.confirm): never a figure of the search itself."""

    column: str  # eager | compile | current
    pooled: float  # geometric mean over processes of baseline time / kernel time
    bound: float | None  # the claim: one-sided prediction bound over processes (None: too few processes)
    upper: float | None
    processes: int
    cv_pct: float | None  # cross-process coefficient of variation of the speedup, in percent
    verdict: str  # faster | not faster | not shown
    baseline_us: float | None = None  # geometric mean over processes of the per-process medians
    kernel_us: float | None = None

    @property
    def claimed(self) -> bool:
        return self.verdict == "faster"


@dataclass(frozen=True)
class CaseBench:
    name: str
    params: dict[str, object]  # the case's parameters, as the task names them
    regime: str
    figures: tuple[ColumnFigure, ...]  # one per baseline column with figures, in column order


@dataclass(frozen=True)
class BaselineColumn:
    name: str  # eager | compile | current
    label: str  # what it is, in words (the current path's callable named)
    available: bool
    reason: str  # why it has no figures, when not available
    processes: int


@dataclass(frozen=True)
class MicrobenchEvidence:
    measured: bool
    reason: str  # why nothing was timed, when measured is false
    regime: str  # the regime the task is judged in ("graph" or "wall")
    columns: tuple[BaselineColumn, ...] = ()
    cases: tuple[CaseBench, ...] = ()  # one per case and regime timed
    confidence_pct: float = 97.5  # of the one-sided bounds
    min_processes: int = 0
    max_processes: int = 0
    # The least cross-process spread each regime's bounds assume (kernelbot.confirm.stoprule), percent.
    spread_floor_pct: tuple[tuple[str, float], ...] = ()
    # Every case's current-path bound above 1 (None: no current-path figure); and the cases where the
    # kernel was shown not to beat the current path (no pull request is opened then).
    beats_current_path: bool | None = None
    not_faster_than_current: tuple[str, ...] = ()
    confirm_s: float | None = None  # the confirmation's own wall time


@dataclass(frozen=True)
class TestCounts:
    __test__ = False

    passed: int
    failed: int
    skipped: int


@dataclass(frozen=True)
class TestsEvidence:
    __test__ = False

    ran: bool
    reason: str  # why the tests were not run, when ran is false
    command: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    before: TestCounts | None = None  # None: no related test existed on the base
    after: TestCounts | None = None
    new_failures: tuple[str, ...] = ()
    preexisting_failures: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()


@dataclass(frozen=True)
class E2EEvidence:
    measured: bool
    reason: str
    command: tuple[str, ...] = ()
    cwd: str = ""  # where the command runs, relative to the repo root
    metric: str = ""
    unit: str = ""
    higher_is_better: bool = True
    before: tuple[float, ...] = ()
    after: tuple[float, ...] = ()
    before_mean: float | None = None
    after_mean: float | None = None
    before_cv_pct: float | None = None
    after_cv_pct: float | None = None
    delta_pct: float | None = None  # change of the metric, after vs before, in percent
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    claimed: bool = False  # the whole interval lies on the better side of zero
    regressed: bool = False  # the whole interval lies on the worse side: the change made the engine slower
    confidence_pct: int = CONFIDENCE_PCT
    runs: int = 0  # per side
    # The adaptive rule's target (None: a fixed number of runs), whether a cap came first, and, when the
    # time budget was that cap, it in words ("the time budget of 300 s"; "": the cap on runs).
    target_half_width_pct: float | None = None
    inconclusive: bool = False
    stopped_by: str = ""


@dataclass(frozen=True)
class ProvenanceEvidence:
    operators: dict[str, int]  # programs created per search operator
    models: tuple[str, ...]  # LLMs the search could call
    best_operator: str
    iterations: int
    evaluations: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    search_s: float | None


@dataclass(frozen=True)
class Evidence:
    op: OpEvidence
    repo: RepoEvidence
    environment: EnvironmentEvidence
    motivation: MotivationEvidence
    modifications: ModificationsEvidence
    accuracy: AccuracyEvidence
    microbenchmarks: MicrobenchEvidence
    tests: TestsEvidence
    e2e: E2EEvidence
    provenance: ProvenanceEvidence
    reproduce: str
    human_steps: tuple[str, ...] = ()
    schema: int = EVIDENCE_SCHEMA

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        # NaN/inf are not numbers a body may show; refusing them here keeps evidence.json valid JSON.
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        if data.get("schema") != EVIDENCE_SCHEMA:
            raise RunStateError(
                f"evidence.json has schema {data.get('schema')!r}; this kernelbot reads {EVIDENCE_SCHEMA}"
            )
        return _build(cls, data)

    @classmethod
    def from_json(cls, text: str) -> Evidence:
        return cls.from_dict(json.loads(text))


def _build(cls: type, data: Mapping[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {
        f.name: _convert(hints[f.name], data[f.name]) for f in dataclasses.fields(cls) if f.name in data
    }
    return cls(**kwargs)


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(inner[0], value)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_convert(item, v) for v in value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build(hint, value)
    if hint is float and isinstance(value, int):
        return float(value)
    return value


__all__ = [
    "CONFIDENCE_PCT",
    "EVIDENCE_SCHEMA",
    "AccuracyCase",
    "AccuracyEvidence",
    "BaselineColumn",
    "CaseBench",
    "ColumnFigure",
    "E2EEvidence",
    "EnvironmentEvidence",
    "Evidence",
    "MicrobenchEvidence",
    "ModificationsEvidence",
    "MotivationEvidence",
    "OpEvidence",
    "ProvenanceEvidence",
    "RepoEvidence",
    "TestCounts",
    "TestsEvidence",
]
