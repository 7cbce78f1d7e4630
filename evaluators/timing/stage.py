"""The timing stage: reference and candidate, both regimes, same process, each on its own inputs.

Per case: one reference call on a copy of its inputs tells which arguments it mutates (those get per-call
copies, see timing.inputs) and how many bytes a call must move (the roofline floor). Per regime: capture or
prepare both implementations, warm up, take interleaved paired samples until the medians converge or a cap
is hit, and end with the post-timing re-check: fresh values (a new hidden seed) are copied into the
candidate's own tensors before its last timed replay/batch, and what that call returned is judged by
evaluators.correctness.check_call. A candidate measured faster than the hardware allows is flagged (class 15).

Called by the worker after the correctness stage passed. The device's GPU lock (`gpu_lock`) is held only while
samples are taken (warm-up, sampling, the re-check's replay): inputs, captures and the verdict happen outside
it, so other workers' timing goes on meanwhile. In the wall regime, which measures host work, holding the lock
also holds the GPU's timing core: the sampling thread moves onto it for the case
(evaluators.timing.placement), where no other worker runs, spins the core's clock up, and samples until the
speedup's interval is narrow (evaluators.timing.wall_sampler). Import this module in the worker before the
candidate is imported: the timers and CUDA entry points are bound at import time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evaluators.context import JudgeContext
from evaluators.errors import TaskError
from evaluators.result import HackFinding, RegimeTiming
from evaluators.roofline import Ceilings, Traffic, beyond_roofline, case_traffic, declared_flops, floor_for
from evaluators.static.facts import host_arguments
from evaluators.task import REGIMES, Case
from evaluators.timing.core_plan import CorePlan
from evaluators.timing.cuda_feed import CudaFeed, can_feed
from evaluators.timing.graph import AlternatingGraphs, CaptureError, GraphRunner
from evaluators.timing.inputs import Inputs, InputSet, clone_inputs, get_at, graph_input_sets, run_and_diff
from evaluators.timing.placement import FOLLOW_UP_CPU_WARMUP_MS, gc_paused, pinned, process_plan, warm_cpu
from evaluators.timing.recheck import CheckCall, default_check_call, read_verdict
from evaluators.timing.sampler import MIN_WARMUP_ROUNDS, Samples, sample_interleaved, summarize, warm_up
from evaluators.timing.support import RegimeFailure as _RegimeFailure
from evaluators.timing.support import RegimeSkipped as _RegimeSkipped
from evaluators.timing.support import armed as _armed
from evaluators.timing.support import bind as _bind
from evaluators.timing.support import derive_seed as derive_seed
from evaluators.timing.support import describe_error as _describe_error
from evaluators.timing.support import device_sync as _device_sync
from evaluators.timing.support import guarded as _guarded
from evaluators.timing.support import hardware as _hardware
from evaluators.timing.support import l2_bytes as _l2_bytes
from evaluators.timing.support import release_cached_memory as _release_cached_memory
from evaluators.timing.wall import WallRunner, wall_calls_for
from evaluators.timing.wall_sampler import CiStop, ci_half_width, sample_until_ci, summarize_wall

# Per-call copies of mutated arguments may take this much device memory per implementation.
COPY_BUDGET_BYTES = 1 << 30
# The full warm-up (config.timing.warmup_ms) brings the clocks up once per evaluation; every later case and
# regime, which follows with the GPU still busy, only needs its own first calls out of the way.
FOLLOW_UP_WARMUP_MS = 2.0
# Wall warm-up rounds at least: a fed runner's first sample sizes its busy-wait, and code that synchronises
# shows itself in the next few (evaluators.timing.wall.STARVED_SAMPLES_TO_SYNC).
WALL_WARMUP_ROUNDS = 5

# Holds the device's GPU lock for one case and regime's sampling; yields True when the GPU was timing for
# another worker moments before (its clocks are up: the short warm-up is enough).
GpuHold = Callable[[], contextlib.AbstractContextManager[bool]]


@contextlib.contextmanager
def no_lock() -> Iterator[bool]:
    """The GpuHold of a caller that serialises timing itself (bench scripts, tests)."""
    yield False


@dataclass
class TimingReport:
    timings: dict[str, dict[str, RegimeTiming]] = field(default_factory=dict)
    findings: list[HackFinding] = field(default_factory=list)
    passed: bool = True
    reason: str = ""
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)  # case -> regime -> why not timed
    floors_us: dict[str, dict[str, float]] = field(default_factory=dict)  # case -> regime -> roofline floor

    @property
    def quarantine(self) -> bool:
        """Beyond-roofline results are kept apart for a human to look at."""
        return any(f.kind == "beyond_roofline" for f in self.findings)

    def fail(self, reason: str, findings: list[HackFinding] | None = None) -> TimingReport:
        self.passed = False
        self.reason = self.reason or reason
        self.findings.extend(findings or [])
        return self


class CaseTimer:
    """Times one case in each regime; holds the two implementations' own inputs and the case's roofline."""

    def __init__(
        self,
        ctx: JudgeContext,
        case: Case,
        index: int,
        check: CheckCall,
        plan: CorePlan | None = None,
        first_call: GpuHold = no_lock,
    ) -> None:
        self.ctx, self.case, self.check = ctx, case, check
        self.plan = plan or CorePlan(None, note="not pinned: no plan given")
        self.where = ""  # where the wall regime's timing thread ran, for the log line
        self.seeds = ctx.seeds or (0,)
        self.index = index
        self.device = ctx.backend.device
        self.sync = _device_sync(ctx)
        task = ctx.task
        self.ref_inputs = task.make_inputs(case, derive_seed(self.seeds, index, "reference"), self.device)
        self.cand_inputs = task.make_inputs(case, derive_seed(self.seeds, index, "candidate"), self.device)
        probe = clone_inputs(self.ref_inputs)
        with first_call():  # the baseline's first call on these shapes (see time_cases)
            outputs, changed = run_and_diff(ctx.reference, probe, self.sync)
        self.mutated = [path for path, n in changed.items() if n > 0]
        changed_bytes = sum(n * get_at(probe, path).element_size() for path, n in changed.items())
        flops = declared_flops(task, case)
        bound = _bind(ctx.reference, probe)
        self.traffic: Traffic = case_traffic(bound, outputs, changed_bytes, task.roofline_reads, flops)
        del probe, outputs
        # (reference, candidate) per-call medians of this case's graph regime once it has been timed: they
        # size the wall regime's samples when that one follows (see wall_calls_for).
        self.graph_us: tuple[float, float] | None = None

    def _flush(self) -> Callable[[], None] | None:
        cfg = self.ctx.config.timing
        cold = self.ctx.task.cache == "cold" if cfg.l2_flush is None else bool(cfg.l2_flush)
        return self.ctx.backend.flush_l2 if cold else None

    def _max_calls(self, inputs: InputSet) -> int:
        return max(1, COPY_BUDGET_BYTES // max(1, inputs.mutated_bytes)) if inputs.mutated else 1 << 30

    def run(self, regime: str, warmup_ms: float, hold: GpuHold = no_lock) -> RegimeTiming:
        self.started = time.monotonic()
        ref_set = InputSet(self.ref_inputs, self.mutated)
        cand_set = InputSet(self.cand_inputs, self.mutated)
        # The sandbox attributes events by stack frame, so arming it once around the whole regime (reference
        # calls included) costs nothing per call and keeps the timed loop free of context-manager overhead.
        with _armed(self.ctx):
            # Captures are host work (the calibration's few replays aside): they need no exclusive GPU.
            if regime == "graph":
                ref_runner, cand_runner = self._graph_runners(ref_set, cand_set)
            else:
                ref_runner, cand_runner = self._wall_runners(ref_set, cand_set)
            self.calls_per_sample = (ref_runner.calls, cand_runner.calls)  # for the log line
            try:
                # The re-check's fresh values are made before the lock is taken (random fills of big inputs).
                fresh = self.ctx.task.make_inputs(
                    self.case, derive_seed(self.seeds, self.index, regime, "recheck"), self.device
                )
                asked_at = time.monotonic()
                # Holding the lock holds the timing core too: the wall regime's host work is what it measures.
                with hold() as gpu_warm, self._pinned(regime) as self.where:
                    locked_at, self.locked_epoch = time.monotonic(), time.time()
                    self.lock_wait_s = locked_at - asked_at
                    warm = min(warmup_ms, FOLLOW_UP_WARMUP_MS) if gpu_warm else warmup_ms
                    samples, checked = self._sample(
                        regime, ref_runner, cand_runner, cand_set, warm, fresh, gpu_warm
                    )
                    self.lock_held_s = time.monotonic() - locked_at
            finally:
                ref_runner.release()
                cand_runner.release()
            timing = self._judge(regime, samples, checked)
            if regime == "graph":
                self.graph_us = (timing.reference.median_us, timing.candidate.median_us)
            return timing

    def _pinned(self, regime: str) -> contextlib.AbstractContextManager[str]:
        return pinned(self.plan) if regime == "wall" else contextlib.nullcontext("")

    def _graph_runners(self, ref_set: InputSet, cand_set: InputSet) -> tuple[Any, Any]:
        host = sorted(host_arguments(self.ctx.task))
        if host:  # a replay redoes the recorded kernels only: host code computing from these is not redone
            reason = (
                f"{', '.join(host)} stays on the CPU (the engine's own copy): a CUDA graph replay would not "
                "redo the host code that reads it, so the call cannot run from a graph"
            )
            if self.ctx.task.regime == "graph":
                raise _RegimeFailure(
                    f"the task's regime is graph, but {reason}; extract it with --regime wall"
                )
            raise _RegimeSkipped(reason)
        if not self.device.startswith("cuda"):
            raise _RegimeSkipped(f"CUDA graphs need a CUDA device, not {self.device!r}")
        target = self.ctx.config.timing.replay_target_us
        flush = self._flush()
        ref = self._alternating(self.ctx.reference, ref_set, flush)
        cand = self._alternating(self.ctx.candidate, cand_set, flush)
        try:
            _guarded("reference", "graph", self.case, ref.prepare)(target)
        except CaptureError as exc:
            raise _RegimeSkipped(f"the reference cannot be captured in a CUDA graph ({exc})") from exc
        try:
            _guarded("candidate", "graph", self.case, cand.prepare)(target)
        except CaptureError as exc:
            reason = f"the candidate cannot be captured in a CUDA graph ({exc})"
            if self.ctx.task.regime == "graph":
                raise _RegimeFailure(f"{reason}; this task's code runs inside captured graphs") from exc
            raise _RegimeSkipped(reason) from exc
        return ref, cand

    def _alternating(
        self, fn: Callable[..., Any], inputs: InputSet, flush: Callable[[], None] | None
    ) -> AlternatingGraphs:
        """The implementation's own inputs, plus copies at other addresses (see AlternatingGraphs)."""
        sets = [inputs]
        # Only where the speedup is scored: the other regime is reported with a small budget.
        scored = self.ctx.task.regime == "graph"
        copies = graph_input_sets(self.ctx.config.timing, inputs.base) if scored else 1
        for _ in range(max(1, copies) - 1):
            sets.append(InputSet(clone_inputs(inputs.base), self.mutated))
        max_calls = min(self._max_calls(s) for s in sets)
        return AlternatingGraphs([GraphRunner(fn, s, flush, max_calls) for s in sets])

    def _wall_runners(self, ref_set: InputSet, cand_set: InputSet) -> tuple[Any, Any]:
        cfg = self.ctx.config.timing
        flush = self._flush()
        # Without a graph timing of this case (the wall regime ran first, or the graph one was skipped) each
        # sample takes wall_calls calls; with one, a slow implementation takes fewer.
        ref_us, cand_us = self.graph_us or (None, None)
        target = cfg.wall_sample_target_us
        ref_calls = wall_calls_for(ref_us, target, min(cfg.wall_calls, self._max_calls(ref_set)))
        cand_calls = wall_calls_for(cand_us, target, min(cfg.wall_calls, self._max_calls(cand_set)))
        # Fed where the wall regime is scored on a CUDA device; the other regime's short look (and every other
        # device) times sync to sync: no warm-up rounds to spend on sizing busy-waits.
        fed = self.ctx.task.regime == "wall" and self.device.startswith("cuda") and can_feed()
        ref_feed, cand_feed = (CudaFeed(), CudaFeed()) if fed else (None, None)
        return (
            WallRunner(self.ctx.reference, ref_set, self.sync, ref_calls, flush, ref_feed),
            WallRunner(self.ctx.candidate, cand_set, self.sync, cand_calls, flush, cand_feed),
        )

    def _sample(
        self,
        regime: str,
        ref: Any,
        cand: Any,
        cand_set: InputSet,
        warmup_ms: float,
        fresh: Inputs,
        gpu_warm: bool = False,
    ) -> tuple[Samples, dict[str, Any]]:
        cfg = self.ctx.config.timing
        if regime != self.ctx.task.regime:
            cfg = dataclasses.replace(
                cfg,
                time_cap_s=cfg.secondary_time_cap_s,
                min_time_s=0.0,
                min_samples=min(cfg.min_samples, cfg.secondary_min_samples),
            )
        rng = random.Random(derive_seed(self.seeds, self.index, regime, "order"))
        checked: dict[str, Any] = {}
        # The re-check runs on the primary runner and its input set when the candidate alternates buffers.
        primary = getattr(cand, "primary", None)
        if primary is not None:
            cand_set = primary.inputs
        measure_final = getattr(cand, "measure_primary", cand.measure)
        last = cand_set.calls - 1

        def snapshot_before() -> None:
            checked["before"] = clone_inputs(cand_set.call(last))

        def final_candidate() -> float:
            # Captured cases ignore the seed (their values are recorded ones): the re-check then runs on the
            # same values, and the synthetic cases (a task always has one) are what catches a cache.
            cand_set.load(fresh)
            elapsed = measure_final(before=snapshot_before)
            checked["return"] = cand.last_return()
            checked["after"] = cand_set.call(last)  # the very objects the checked call received
            return elapsed

        ref_measure = _guarded("reference", regime, self.case, ref.measure)
        cand_measure = _guarded("candidate", regime, self.case, cand.measure)
        final_measure = _guarded("candidate", regime, self.case, final_candidate)
        # The secondary regime follows the scored one on the same implementations: their first calls are over.
        secondary = regime != self.ctx.task.regime
        if regime == "wall":
            if not secondary:  # the core the thread just moved to may have idled in a low clock state
                cpu = warm_cpu(FOLLOW_UP_CPU_WARMUP_MS if gpu_warm else cfg.cpu_warmup_ms)
                self.where = f"{self.where}, {cpu.describe()}".strip(", ")
            rule = CiStop(
                ci_target=cfg.wall_ci_target,
                min_samples=cfg.min_samples,
                max_samples=cfg.wall_max_samples,
                min_time_s=cfg.min_time_s,
                time_cap_s=cfg.time_cap_s if secondary else cfg.wall_time_cap_s,
            )
            with gc_paused():
                rounds = 1 if secondary else WALL_WARMUP_ROUNDS
                warm_up([ref_measure, cand_measure], warmup_ms, min_rounds=rounds)
                self.modes = (ref.settle(), cand.settle())
                return sample_until_ci(ref_measure, cand_measure, rule, rng, final_measure), checked
        warm_up([ref_measure, cand_measure], warmup_ms, min_rounds=1 if secondary else MIN_WARMUP_ROUNDS)
        samples = sample_interleaved(ref_measure, cand_measure, cfg, rng, final_candidate=final_measure)
        return samples, checked

    def _judge(self, regime: str, samples: Samples, checked: dict[str, Any]) -> RegimeTiming:
        """The re-check's verdict on the last timed call, then the summary (the GPU lock is free by now)."""
        answer = self.check(self.ctx, self.case, checked["before"], checked["return"], checked["after"])
        ok, why, extra = read_verdict(answer)
        if not ok:
            evidence = (
                f"case {self.case.name!r}, {regime} regime: the candidate's last timed call, on fresh inputs "
                f"copied into the buffers it was timed on, returned a wrong result: {why or 'check failed'}"
            )
            raise _RegimeFailure(
                f"post-timing re-check failed ({regime} regime, case {self.case.name!r}): {why}",
                [HackFinding(kind="drift", evidence=evidence), *extra],
            )
        if extra:
            listing = "; ".join(f"{f.kind}: {f.evidence}" for f in extra)
            raise _RegimeFailure(f"post-timing re-check flagged {listing}", extra)
        self.ctx.log(
            f"timed {self.case.name} [{regime}]: {len(samples.reference)} pairs "
            f"({'/'.join(map(str, self.calls_per_sample))} calls per sample), "
            f"stopped on {samples.stopped} after {samples.elapsed_s * 1e3:.0f} ms of sampling, "
            f"{self.lock_held_s * 1e3:.0f} ms with the GPU lock held at {self.locked_epoch:.3f} "
            f"after {self.lock_wait_s * 1e3:.0f} ms waiting, "
            f"{(time.monotonic() - self.started) * 1e3:.0f} ms with set-up and re-check"
            + (self._wall_note(samples) if regime == "wall" else "")
        )
        cfg = self.ctx.config.timing
        if regime == "wall":
            return summarize_wall(samples, cfg.wall_claim_margin)
        return summarize(samples, claim_margin=cfg.graph_claim_margin)

    def _wall_note(self, samples: Samples) -> str:
        half = ci_half_width(samples.reference, samples.candidate)
        modes = "/".join(getattr(self, "modes", ("?", "?")))
        return f"; speedup CI +-{half * 100:.2f} %, {modes} samples, {self.where}"


def _regimes(ctx: JudgeContext) -> list[str]:
    wanted = [r for r in ctx.config.timing.regimes if r in REGIMES]
    # The task's own regime first: if it fails, the other one is not worth the GPU time.
    return sorted(dict.fromkeys(wanted), key=lambda r: r != ctx.task.regime)


def time_cases(
    ctx: JudgeContext,
    cases: list[Case],
    *,
    check_call: CheckCall | None = None,
    gpu_lock: GpuHold = no_lock,
    cpu_plan: CorePlan | None = None,
    first_call_lock: GpuHold = no_lock,
) -> TimingReport:
    """Time every case in every configured regime; stop at the first failure (the cascade's rule).

    `gpu_lock` is entered around each case and regime's sampling (see the module docstring); inside it the
    wall regime runs on `cpu_plan`'s timing core (default: this process's plan,
    evaluators.timing.placement). `first_call_lock` is entered around the timed reference's first call on
    each case: torch.compile benchmarks its kernels' configurations then, and a choice made while other
    processes use the GPU is a coin toss that the whole pool's shared Inductor cache keeps."""
    report = TimingReport()
    if not getattr(ctx.backend, "can_time", False):
        report.reason = f"not timed: the {ctx.backend.name} backend checks correctness only"
        return report
    check = check_call or default_check_call()
    if cpu_plan is None and "wall" in ctx.config.timing.regimes:
        cpu_plan = process_plan(ctx.backend.device, ctx.config.timing.cpu_affinity)
    plan = cpu_plan or CorePlan(None, note="not pinned: no wall regime")
    ceilings = Ceilings.for_hardware(_hardware(ctx), _l2_bytes(ctx))
    warmup_ms = ctx.config.timing.warmup_ms
    for index, case in enumerate(cases):
        _release_cached_memory(ctx)
        try:
            timer = CaseTimer(ctx, case, index, check, plan, first_call_lock)
        except TaskError:
            raise  # a malformed task (e.g. [roofline] read names no argument): the user's to fix
        except Exception as exc:  # the reference (or make_inputs) raised on its own inputs
            return report.fail(_describe_error("reference", "timing setup", case, exc))
        for regime in _regimes(ctx):
            try:
                timing = timer.run(regime, warmup_ms, gpu_lock)
                warmup_ms = min(warmup_ms, FOLLOW_UP_WARMUP_MS)
            except _RegimeSkipped as exc:
                report.skipped.setdefault(case.name, {})[regime] = str(exc)
                ctx.log(f"not timed {case.name} [{regime}]: {exc}")
                continue
            except _RegimeFailure as exc:
                return report.fail(exc.reason, exc.findings)
            except Exception as exc:  # our own set-up code around the runners
                return report.fail(_describe_error("timing harness", f"{regime} timing", case, exc))
            report.timings.setdefault(case.name, {})[regime] = timing
            floor = floor_for(timer.traffic, ceilings, regime, ctx.task.cache)
            report.floors_us.setdefault(case.name, {})[regime] = floor.us
            finding = beyond_roofline(
                case.name,
                regime,
                timing.candidate.median_us,
                timing.reference.median_us,
                floor,
                ceilings.margin,
            )
            if finding is not None:
                return report.fail(f"faster than the hardware can be: {finding.evidence}", [finding])
    return report
