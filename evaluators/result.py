"""The EvalResult contract: a frozen, JSON-serialisable verdict on one candidate for one task.

The cascade is static -> compile -> correctness -> timing; `stage` is the last stage entered and `passed`
says whether the cascade completed. `score` is what the search maximises: 0 for anything incorrect or
flagged, the aggregate speedup in the task's regime otherwise (1.0 on backends that never time).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum
from typing import Any


class Stage(str, Enum):
    STATIC = "static"
    COMPILE = "compile"
    CORRECTNESS = "correctness"
    TIMING = "timing"


STAGE_ORDER = (Stage.STATIC, Stage.COMPILE, Stage.CORRECTNESS, Stage.TIMING)

# The hack classes the evaluator rejects, numbered as in the evaluator issue; findings carry the key.
HACK_CLASSES: dict[str, tuple[int, str]] = {
    "allocator_reuse": (1, "result read from memory the allocator recycled"),
    "input_mutation": (2, "mutates inputs beyond what the reference mutates"),
    "other_stream": (3, "does work on another CUDA stream"),
    "threads_processes": (4, "starts threads or processes"),
    "lazy_output": (5, "returns a tensor subclass or defers work past the call"),
    "harness_patch": (6, "monkey-patches timers, synchronize or the harness"),
    "output_caching": (7, "caches outputs across calls"),
    "drift": (8, "correct for some calls, then wrong"),
    "persisting_l2": (9, "persisting-L2 / access-policy tricks"),
    "precision_downgrade": (10, "silent precision downgrade"),
    "pytorch_fallback": (11, "computes with PyTorch, the reference or torch.compile"),
    "degenerate_task": (12, "task outputs are near-constant over seeds"),
    "hardcoded_shapes": (13, "hard-codes shapes or seeds"),
    "single_case_aggregate": (14, "one case drives the aggregate speedup"),
    "beyond_roofline": (15, "faster than the hardware can be"),
    "sandbox_escape": (16, "touches files, network, environment or the evaluator"),
    "kernel_override": (17, "re-registers an ATen kernel through torch.library or the dispatcher"),
    "task_tamper": (18, "changes the task's files (reference, inputs, task.toml, captured/)"),
    "store_tamper": (19, "opens the run store or another SQLite database"),
}


@dataclass(frozen=True)
class HackFinding:
    kind: str  # a key of HACK_CLASSES
    evidence: str
    detector: str = "runtime"  # "static" | "runtime"

    @property
    def number(self) -> int:
        return HACK_CLASSES[self.kind][0]

    def __post_init__(self) -> None:
        if self.kind not in HACK_CLASSES:
            raise ValueError(f"unknown hack class {self.kind!r}")


@dataclass(frozen=True)
class TimingStats:
    median_us: float
    cv: float  # coefficient of variation of the kept samples
    samples: int  # kept after Tukey fences
    outliers: int = 0


@dataclass(frozen=True)
class RegimeTiming:
    reference: TimingStats
    candidate: TimingStats
    speedup: float  # reference time / candidate time (median of paired ratios)
    ci_low: float
    ci_high: float
    # The lowest speedup a PR may state for this case and regime: ci_low less the cross-process margin
    # (TimingConfig.graph_claim_margin / wall_claim_margin); None when too few pairs for a 95 % interval
    # or the result predates the field.
    claim_low: float | None = None
    # The roofline floor of this case and regime (evaluators.roofline.floor_for: the least time any correct
    # implementation can take), so floor_us / candidate.median_us is the fraction of the roofline reached;
    # None when the result predates the field.
    floor_us: float | None = None

    @property
    def real(self) -> bool:
        """A speedup is real only when the lower end of its confidence interval exceeds 1."""
        return self.ci_low > 1.0


@dataclass(frozen=True)
class Mismatch:
    """Where a candidate's output first disagreed with the reference."""

    output: str  # "return", "return[1]" or the name of a mutated argument
    index: tuple[int, ...]
    expected: float
    actual: float
    detail: str = ""


@dataclass(frozen=True)
class KernelTime:
    """One device kernel a watched candidate call launched, with its GPU time (torch.profiler)."""

    name: str
    device_us: float


@dataclass(frozen=True)
class CaseResult:
    name: str
    params: dict[str, Any]
    passed: bool
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatch: Mismatch | None = None
    timings: dict[str, RegimeTiming] = field(default_factory=dict)  # "graph" / "wall"
    skipped: str = ""  # reason, when the backend did not run this case
    hidden: bool = False  # a perturbed shape drawn by the evaluator, not listed in task.toml
    # The kernels one call of this case launched, in launch order (GPU backends, runtime checks on; empty
    # elsewhere): a first look at where its time goes, not a timing.
    kernels: tuple[KernelTime, ...] = ()


@dataclass(frozen=True)
class Hardware:
    backend: str = ""
    device: str = ""  # "NVIDIA H200", "cpu"
    driver: str = ""
    torch: str = ""
    triton: str = ""
    python: str = ""
    runtime: str = ""  # CUDA / HIP / MACA version
    sm_count: int = 0
    memory_bandwidth_gbps: float = 0.0


@dataclass(frozen=True)
class EvalResult:
    task: str
    candidate_sha: str
    backend: str
    regime: str
    stage: Stage
    passed: bool
    reason: str = ""
    correct: bool = False  # every case matched the reference (set even when a later check flags it)
    score: float = 0.0
    speedup: float | None = None  # geometric mean over cases, task regime
    speedup_ci: tuple[float, float] | None = None
    cases: tuple[CaseResult, ...] = ()
    hacks: tuple[HackFinding, ...] = ()
    hardware: Hardware = field(default_factory=Hardware)
    quarantined: bool = False  # beyond-roofline results are kept apart for a human to look at
    logs: str = ""  # truncated worker output
    duration_s: float = 0.0
    reference_precision: str = "float64"  # or "native" when the reference cannot run in float64
    # Set when the task, not the candidate, failed (its inputs or reference broke on a case): the message.
    task_fault: str = ""

    def with_updates(self, **changes: Any) -> EvalResult:
        return replace(self, **changes)

    def redacted(self, redact: Callable[[str], str]) -> EvalResult:
        """The result with `redact` applied to every text a candidate can put into it (logs, reason, the
        hacks' evidence and the cases' notes): what the parent keeps, stores, prints and prompts with."""
        return replace(
            self,
            reason=redact(self.reason),
            logs=redact(self.logs),
            hacks=tuple(replace(h, evidence=redact(h.evidence)) for h in self.hacks),
            cases=tuple(_redacted_case(c, redact) for c in self.cases),
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["stage"] = self.stage.value
        return data

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        return _build(cls, data)

    @classmethod
    def from_json(cls, text: str) -> EvalResult:
        return cls.from_dict(json.loads(text))


def _redacted_case(case: CaseResult, redact: Callable[[str], str]) -> CaseResult:
    mismatch = case.mismatch
    if mismatch is not None:
        mismatch = replace(mismatch, detail=redact(mismatch.detail))
    kernels = tuple(replace(k, name=redact(k.name)) for k in case.kernels)
    return replace(case, skipped=redact(case.skipped), mismatch=mismatch, kernels=kernels)


def failure(
    task: str, candidate_sha: str, backend: str, regime: str, stage: Stage, reason: str, **extra: Any
) -> EvalResult:
    """A result that stopped at `stage` for `reason`, with score 0."""
    return EvalResult(
        task=task,
        candidate_sha=candidate_sha,
        backend=backend,
        regime=regime,
        stage=stage,
        passed=False,
        reason=reason,
        **extra,
    )


# --- JSON -> dataclass reconstruction -------------------------------------------------------------------


def _build(cls: type, data: dict[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        kwargs[f.name] = _convert(cls, f.name, value)
    return cls(**kwargs)


def _convert(cls: type, name: str, value: Any) -> Any:
    if value is None:
        return None
    if cls is EvalResult:
        if name == "stage":
            return Stage(value)
        if name == "speedup_ci":
            return (float(value[0]), float(value[1]))
        if name == "cases":
            return tuple(_build(CaseResult, c) for c in value)
        if name == "hacks":
            return tuple(_build(HackFinding, h) for h in value)
        if name == "hardware":
            return _build(Hardware, value)
    if cls is CaseResult:
        if name == "mismatch":
            return _build(Mismatch, value)
        if name == "timings":
            return {k: _build(RegimeTiming, v) for k, v in value.items()}
        if name == "kernels":
            return tuple(_build(KernelTime, k) for k in value)
    if cls is Mismatch and name == "index":
        return tuple(value)
    if cls is RegimeTiming and name in ("reference", "candidate"):
        return _build(TimingStats, value)
    return value
