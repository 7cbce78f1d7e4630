"""Evaluator settings as dataclasses: defaults tuned for the H200, overridable per run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class TimingConfig:
    warmup_ms: float = 50.0  # once per evaluation, so the clocks are up before the first sample
    min_samples: int = 15  # paired (reference, candidate) samples at least
    max_samples: int = 200
    cv_target: float = 0.0025  # stop sampling once both medians' CV is under this...
    # ...and the median per-round speedup's relative standard error is under this (0: not required). The
    # ratio is what the search ranks by; on the H200 a ~7 us kernel's ratios scatter ~0.8 % per round, so
    # the medians alone converged after 15 rounds with a 0.29 % cross-process CV of the speedup.
    speedup_se_target: float = 0.0015
    # ...or this much time per case in the task's own regime has passed. A search ranks with this look; a
    # PR's claims come from the confirmation (kernelbot.confirm), which samples 0.1 s per case in fresh
    # processes. On the H200 (12 workers, bench/run.sh throughput, 2026-12-02) 0.06 rather than 0.1 s
    # took the GPU lock time per candidate 0.83 -> 0.70 s and candidates per GPU-minute 57.1 -> 64.6.
    time_cap_s: float = 0.06
    # ...but not before this much sampling in the task's own regime: a ~1 us kernel's medians "converged" in
    # 15 pairs (8 ms), and the two runs of ten whose speedup fell 0.5 % low were two of those (H200).
    min_time_s: float = 0.03
    # The other regime is reported but not scored: a short look is enough (host-side wall timings scatter by
    # several percent per sample and would otherwise always run to the cap). 10 ms rather than 20: on the
    # H200 with 12 workers, GPU lock time per candidate went 0.80-0.82 s -> 0.72-0.77 s, and candidates per
    # GPU-minute 58.7-61.7 -> 62.0-65.7 (docs/benchmarks.md: H200 runs of 2026-11-30 at 9cb329a and d13b348).
    secondary_time_cap_s: float = 0.01
    # A wall task's scored regime stops on its speedup's confidence interval instead of the medians' CVs
    # (host time scatters by several % per sample, so those never reached cv_target: 98 of 98
    # decode_metadata cases ran to the cap on the H200); this is its cap. A ~10 us launch-bound call's ratio
    # scatters ~6 % per pair on the H200, so its interval reaches ~+-0.8 % in 0.2 s, ~+-1.5 % in 0.06 s;
    # more pairs would barely move the cross-process spread (per-process effects of ~0.8 % dominate it,
    # 2026-12-01 probe), and every case of a wall candidate holds the GPU lock that long. A search ranks
    # with 0.06 s (at 0.2 s, 7 decode_metadata cases held the lock ~1 s longer per wall candidate, the
    # likely cause of bench/run.sh throughput's 64.2 -> 50.4 per GPU-minute); a PR's claims come from
    # the confirmation (kernelbot.confirm), which times the wall regime with 0.2 s in every process.
    wall_time_cap_s: float = 0.06
    secondary_min_samples: int = 5
    # Graph regime: each implementation replays this many separately allocated copies of its inputs in
    # turn, so where one allocation happens to land in memory weighs less (evaluators.timing.graph).
    graph_input_sets: int = 2
    # ...and this many for a case whose inputs fit in small_input_bytes: where a ~1 us kernel's few KiB land
    # weighs most, and its copies cost next to nothing. On the H200, under a 12- or 16-worker neighbour, the
    # 128 KiB stability kernel's speedup CV was 0.22-0.32 % over 4 runs with 2 sets, 0.11 % and 0.18 % with 4.
    small_input_sets: int = 4
    small_input_bytes: int = 1 << 20
    replay_target_us: float = 200.0  # graph regime: calls captured per graph so a replay lasts ~this long
    wall_calls: int = 10  # wall regime: back-to-back calls between two device syncs, at most
    # ...and fewer for an implementation whose graph-regime time says a sample of wall_calls calls would last
    # longer than this (evaluators.timing.wall.wall_calls_for; 0: always wall_calls). The sync cost per sample
    # is amortised over its calls, so ~2 ms of calls keeps it under ~0.5 %; the big cases' eager references
    # took 4-7 calls, not 10, on the H200. That saved little GPU time: the secondary look still runs to its
    # cap (secondary_time_cap_s) on every case.
    wall_sample_target_us: float = 2000.0
    # Wall regime (evaluators.timing.wall_sampler): sampling stops once the 95 % CI of the median paired
    # speedup is within this fraction of it on either side (after min_samples and min_time_s), or at
    # wall_time_cap_s / wall_max_samples. The half-width is ~2.5 sigma / sqrt(pairs) for a per-pair
    # scatter sigma: 0.5 % takes ~100 pairs at 2 %, ~220 at 3 %, ~900 at 6 % (then the cap ends it).
    wall_ci_target: float = 0.005
    wall_max_samples: int = 1000  # the summary's Harrell-Davis medians cost O(pairs) Beta weights each
    # The lower bound a PR may claim (RegimeTiming.claim_low): the CI's lower end, less what a fresh
    # process moves a speedup on top of its own interval (the cross-process targets of docs/benchmarks.md).
    graph_claim_margin: float = 0.0025
    wall_claim_margin: float = 0.01
    # While it holds the GPU lock for wall timing, the worker's timing thread runs alone on one reserved core
    # that no other evaluation worker (nor anything it starts: compilers) may use
    # (evaluators.timing.placement).
    cpu_affinity: bool = True
    # ...and first spins until that core's clock is steady, for at most this long (2 ms when the core was
    # timing for another worker moments before).
    cpu_warmup_ms: float = 20.0
    l2_flush: bool | None = None  # None: flush only for tasks with cache = "cold"
    regimes: tuple[str, ...] = ("graph", "wall")
    # What the candidate is timed against (evaluators.timing.baselines): "eager" (the task's reference),
    # "compile" (torch.compile of it), "call:module:qualname" (an importable callable with the reference's
    # signature, e.g. the engine's current path) or "rival" (the entry of rival_source, another candidate for
    # the task: a search's final comparison). Correctness is always judged against the eager reference.
    baseline: str = "eager"
    rival_source: str = ""
    # Time (and re-check) the candidate under torch.compile (dynamic=False), as an engine runs a function it
    # compiles: a kernel called inside a compiled region is measured there (kernelbot's confirmation).
    compile_candidate: bool = False
    # True when the caller already holds the device's GPU lock for the whole evaluation (a confirmation
    # run holding the GPU exclusively across its processes): the worker then takes no lock of its own.
    caller_holds_gpu: bool = False
    # ...and, with it, the name of that caller's lock for its own workers (a plain file name in the lock
    # directory; evaluators.gpu_lock): the worker holds it shared from the task's first GPU call on and
    # exclusively while it samples, so several processes of one run can prepare at once and time alone.
    run_lock: str = ""


@dataclass(frozen=True)
class EvalConfig:
    backend: str = "auto"  # "auto" | "triton-cuda" | "triton-interpret" | "maca"
    device_index: int = 0
    seeds_per_case: int = 3  # hidden seeds drawn per evaluation, never stored in the task
    hidden_cases: int = 1  # extra cases with perturbed `dynamic` sizes (hard-coded shape check)
    drift_calls: int = 6  # repeated calls with fresh values in the same buffers (caching / drift)
    # Class 12, the task's own fault (outputs that barely depend on the inputs). Off only where the task was
    # already judged by a search (a confirmation process): on a serving-size task its extra reference runs
    # were 5 of a fresh process's ~17 working seconds on the H200.
    degenerate_check: bool = True
    static_checks: bool = True
    runtime_checks: bool = True
    poison_allocator: bool = True
    timing: TimingConfig = field(default_factory=TimingConfig)
    # Per-stage budgets: the worker is killed when a stage runs past its budget.
    compile_timeout_s: float = 180.0
    correctness_timeout_s: float = 300.0
    timing_timeout_s: float = 300.0
    # The interpreter runs kernels in numpy; cases with more elements than this are skipped there.
    interpret_max_numel: int = 1 << 21
    # ...and once this much of the correctness stage has passed, larger cases are skipped too (the
    # interpreter's cost grows with the number of kernel programs, not only elements; one case always runs).
    interpret_budget_s: float = 60.0
    # Share of the GPU's memory one evaluation may hold (torch's per-process memory fraction); 0: the pool
    # gives each of its N workers 0.9 / N. Without it, 12 workers judging the 4096-token cases of a task at
    # once exhausted an H200 and the out-of-memory errors were charged to whichever candidate hit them.
    device_memory_share: float = 0.0
    memory_limit_gb: float = 16.0  # host memory cap of a worker (RLIMIT_DATA), 0 = none
    log_limit_chars: int = 20_000
    output_limit_mb: int = 64  # a worker's stdout/stderr file may not grow past this (RLIMIT_FSIZE)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def compared(self, against: str = "", baseline: str = "") -> EvalConfig:
        """This config timed against the program `against` (its source: the "rival" baseline, in the same
        worker, pair by pair), else against `baseline` (a name of evaluators.timing.baselines: "compile"),
        else as it is."""
        if against:
            return replace(self, timing=replace(self.timing, baseline="rival", rival_source=against))
        return replace(self, timing=replace(self.timing, baseline=baseline)) if baseline else self

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalConfig:
        data = dict(data)
        timing = data.pop("timing", {})
        if isinstance(timing, dict):
            timing = dict(timing)
            if "regimes" in timing:
                timing["regimes"] = tuple(timing["regimes"])
            timing = TimingConfig(**timing)
        return cls(timing=timing, **data)
