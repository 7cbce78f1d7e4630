"""The cascade, run inside an evaluation worker: static -> compile -> correctness -> timing.

Each stage stops the cascade with a reason the search can learn from; any hack finding zeroes the score.
The stages themselves live with their owners (static, guards, correctness, timing, scoring); this
module only orders them, reports progress to the parent (which gives each stage its own time budget) and
turns what they say into one EvalResult. Nothing here raises for a bad candidate.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import evaluators
from evaluators.backends.base import Backend
from evaluators.candidate import parse_candidate
from evaluators.config import EvalConfig
from evaluators.context import JudgeContext
from evaluators.errors import CandidateError, TaskError
from evaluators.gpu_lock import GpuLock
from evaluators.job import Job, candidate_sha
from evaluators.result import CaseResult, EvalResult, HackFinding, Hardware, RegimeTiming, Stage
from evaluators.task import Case, Task, load_task
from evaluators.task_check import check_task

CANDIDATE_FILE = "candidate.py"
CANDIDATE_MODULE = "kb_candidate"
RIVAL_FILE = "rival.py"  # TimingConfig.rival_source, where the baseline is "rival"
RIVAL_MODULE = "kb_rival"
# Prefix of the log line with the seconds each stage took (bench/throughput.py reads it from EvalResult.logs).
STAGE_SECONDS_TAG = "kernelbot-stage-seconds"
# A GPU whose lock was let go less than this long ago was busy timing: its clocks are up, so a case needs
# only the short warm-up (evaluators.timing.stage.FOLLOW_UP_WARMUP_MS), not the full one.
WARM_GPU_S = 0.25
REASON_LIMIT = 4000  # characters of traceback kept in a reason (the LLM's feedback)


class TaskProblem(Exception):
    """The task itself (not the candidate) cannot be used; the parent raises it as a TaskError."""


@dataclass
class Prepared:
    """Everything the cascade needs, gathered before the candidate is looked at."""

    task: Task
    backend: Backend
    config: EvalConfig
    seeds: tuple[int, ...]
    source: str
    workdir: Path
    hardware: Hardware
    reference: Callable[..., Any]
    progress: Callable[[str], None]
    first_inputs: tuple[tuple, dict] | None = None  # the smallest case's, built by the task check
    # The caller's lock for its own workers (TimingConfig.run_lock), held shared from the task check on.
    run_lock: GpuLock | None = None


def hardware_dict(hardware: Hardware) -> dict[str, Any]:
    return dataclasses.asdict(hardware)


def prepare(
    job: Job, backend: Backend, hardware: Hardware, *, workdir: Path, progress: Callable[[str], None]
) -> Prepared:
    """Load the task and its reference and check them on the smallest case, before any candidate code runs
    (raising TaskProblem for a broken task: the task's fault is never the candidate's), and read the job's
    config."""
    config = EvalConfig.from_dict(job.config)
    run_lock = None
    if config.timing.caller_holds_gpu and config.timing.run_lock:
        # Before the task check: it is the worker's first call on the GPU. Held until the worker exits.
        run_lock = GpuLock(config.timing.run_lock)
        run_lock.acquire(shared=True)
    try:
        task = load_task(job.task_dir)
        reference = task.pin()  # read once, before the candidate exists (evaluators.task_files)
        first = check_task(
            task, reference, _smallest_case(task), job.seeds[0] if job.seeds else 0, backend.device
        )
    except TaskError as exc:
        raise TaskProblem(str(exc)) from exc
    return Prepared(
        task=task,
        backend=backend,
        config=config,
        seeds=job.seeds,
        source=job.source,
        workdir=workdir,
        hardware=hardware,
        reference=reference,
        progress=progress,
        first_inputs=first,
        run_lock=run_lock,
    )


def run(p: Prepared) -> EvalResult:
    """Judge the candidate; always returns an EvalResult."""
    return _Cascade(p).run()


class _Stop(Exception):
    """Ends the cascade early with a finished EvalResult."""

    def __init__(self, result: EvalResult) -> None:
        super().__init__(result.reason)
        self.result = result


class _Cascade:
    def __init__(self, p: Prepared) -> None:
        self.p = p
        self.stage = Stage.STATIC
        self.sha = candidate_sha(p.source, p.task.entry)
        self.start = time.monotonic()
        self.sandbox: Any = None
        # Seconds per stage (and the wait for the GPU lock): where an evaluation's time goes, in the logs.
        self.seconds: dict[str, float] = {}
        self._mark: tuple[str, float] | None = None

    def run(self) -> EvalResult:
        try:
            self.static()
            ctx = self.compile()
            cases, report = self.correctness(ctx)
            result = self.timing(ctx, cases, report)
            ctx.sandbox.check_dispatcher()  # before passing it: no ATen kernel was replaced meanwhile
            self.check_sandbox(ctx.sandbox)
            return result
        except _Stop as stop:
            return stop.result
        except BaseException as exc:  # a stage's own failure, or a candidate's sys.exit: still a verdict
            traceback.print_exc()
            try:
                self.check_sandbox(self.sandbox)  # a refused operation behind the failure is a hack
            except _Stop as stop:
                return stop.result
            return self.result(passed=False, reason=f"{self.stage.value} stage failed: {_brief(exc)}")

    def _exclusively(self, run_lock: GpuLock) -> Iterator[bool]:
        """The run lock switched to exclusive for one sampling, then back to shared. The device is drained
        on either side: work this worker queued must not run into another's samples, nor another's into
        these."""
        backend = self.p.backend
        backend.synchronize()
        run_lock.switch(shared=False)
        held_from = time.monotonic()
        try:
            self.p.progress("timing")
            yield run_lock.idle_s < WARM_GPU_S
        finally:
            backend.synchronize()
            run_lock.switch(shared=True)
            self.add_seconds("wait_lock", run_lock.waited_s)
            self.add_seconds("locked", time.monotonic() - held_from)

    # --- stages ---------------------------------------------------------------------------------------

    def static(self) -> None:
        self.enter(Stage.STATIC, "static")
        try:
            parse_candidate(self.p.source, self.p.task.entry)
        except CandidateError as exc:
            self.stop(str(exc))
        if not self.p.config.static_checks:
            return
        from evaluators.static.checks import check_static

        report = check_static(self.p.source, self.p.task)
        if report.findings or report.errors:
            problems = [*report.errors, *(f"{f.kind}: {f.evidence}" for f in report.findings)]
            self.stop("static checks: " + "; ".join(problems), hacks=tuple(report.findings))

    def compile(self) -> JudgeContext:
        self.enter(Stage.COMPILE, "compile")
        from evaluators.guards import Sandbox

        p = self.p
        path = p.workdir / CANDIDATE_FILE
        path.write_text(p.source)
        protected = [Path(evaluators.__file__).resolve().parent, p.task.root]
        sandbox = self.sandbox = Sandbox(path, protected_paths=protected)
        sandbox.install()
        if p.first_inputs is not None:
            args, kwargs = p.first_inputs
        else:
            args, kwargs = p.task.make_inputs(
                _smallest_case(p.task), p.seeds[0] if p.seeds else 0, p.backend.device
            )
        try:
            with sandbox.armed():
                module = _import_candidate(path)
                entry = getattr(module, p.task.entry, None)
                if not callable(entry):
                    self.stop(f"the candidate defines no callable {p.task.entry!r}")
                entry(*args, **kwargs)  # Triton compiles at the first call
                p.backend.synchronize()  # surface asynchronous launch errors here, not in correctness
        except _Stop:
            raise
        except BaseException as exc:  # SystemExit from a candidate is a compile failure too
            traceback.print_exc()
            self.check_sandbox(sandbox)  # an operation the sandbox refused is a hack, not a compile error
            self.stop(f"compile: {_candidate_traceback(exc, path)}")
        self.check_sandbox(sandbox)
        return JudgeContext(
            task=p.task,
            backend=p.backend,
            config=p.config,
            seeds=p.seeds,
            reference=p.reference,
            candidate=entry,
            candidate_module=module,
            candidate_path=path,
            candidate_source=p.source,
            sandbox=sandbox,
            progress=p.progress,
            log=lambda text: print(text, file=sys.stderr),
        )

    def correctness(self, ctx: JudgeContext) -> tuple[list[CaseResult], Any]:
        self.enter(Stage.CORRECTNESS, "correctness")
        from evaluators.correctness.stage import check_correctness

        try:
            report = check_correctness(ctx)
        except (
            TaskError
        ) as exc:  # raised after the candidate ran: reported (the candidate unblamed), not raised
            self.stop(f"task error: {exc}", task_fault=str(exc))
        self.check_sandbox(ctx.sandbox)
        cases = list(report.cases)
        extra = {"cases": tuple(cases), "reference_precision": report.reference_precision}
        if report.findings:
            self.stop(
                _flag_reason(report.findings), hacks=tuple(report.findings), correct=report.passed, **extra
            )
        if not report.passed:
            self.stop(report.reason or "wrong results", **extra)
        return cases, report

    def timing(self, ctx: JudgeContext, cases: list[CaseResult], report: Any) -> EvalResult:
        p = self.p
        done = {"correct": True, "reference_precision": report.reference_precision}
        timed_ctx, check = self.baseline(ctx, cases, done)
        if not p.backend.can_time:
            reason = f"correct on {sum(c.passed for c in cases)} case(s); {p.backend.name} does not time"
            return self.result(passed=True, reason=reason, score=1.0, cases=tuple(cases), **done)
        from evaluators.gpu_lock import device_key
        from evaluators.scoring import aggregate
        from evaluators.timing.stage import time_cases  # the snapshotted namespace (timing/__init__)

        self.enter(Stage.TIMING, "timing")
        lock = GpuLock(device_key(getattr(p.backend, "device_index", 0)))

        @contextlib.contextmanager
        def hold() -> Iterator[bool]:
            # Held per case and regime, for sampling only; the worker reports each wait so the pool applies
            # the lock-wait budget to it (and the timing budget to the rest).
            p.progress("wait-lock")
            if p.run_lock is not None:  # the caller's workers: alone on the GPU while sampling
                yield from self._exclusively(p.run_lock)
                return
            if p.config.timing.caller_holds_gpu:  # held exclusively by whoever asked for this evaluation
                p.progress("timing")
                yield False
                return
            lock.acquire()
            held_from = time.monotonic()
            try:
                p.progress("timing")
                yield lock.idle_s < WARM_GPU_S
            finally:
                lock.release()
                self.add_seconds("wait_lock", lock.waited_s)
                self.add_seconds("locked", time.monotonic() - held_from)

        # A baseline other than the task's reference is still judged against the reference (the re-check).
        against: dict[str, Any] = {"check_call": check} if check is not None else {}
        # torch.compile tunes its kernels at their first call: where this run's processes share the GPU
        # (TimingConfig.run_lock), that call is made alone, as samples are.
        from evaluators.timing.baselines import COMPILE

        if p.run_lock is not None and p.config.timing.baseline == COMPILE:
            against["first_call_lock"] = hold
        timing = time_cases(timed_ctx, list(report.timeable), gpu_lock=hold, **against)
        self._clock(None)
        self.check_sandbox(ctx.sandbox)
        cases = [dataclasses.replace(c, timings=_with_floors(c.name, timing)) for c in cases]
        hacks = tuple(timing.findings)
        quarantined = any(f.kind == "beyond_roofline" for f in hacks)
        if hacks or not timing.passed:
            reason = _flag_reason(hacks) if hacks else (timing.reason or "timing failed")
            self.stop(reason, hacks=hacks, quarantined=quarantined, cases=tuple(cases), **done)
        agg = aggregate(
            p.task, cases, p.hardware, single_case_check=p.config.timing.baseline in ("", "eager")
        )
        hacks = tuple(agg.findings)
        if hacks:
            quarantined = any(f.kind == "beyond_roofline" for f in hacks)
            self.stop(_flag_reason(hacks), hacks=hacks, quarantined=quarantined, cases=tuple(cases), **done)
        ci = tuple(agg.ci) if agg.ci is not None else None
        reason = f"correct; speedup {agg.speedup:.3f}x ({p.task.regime})" if agg.speedup else "correct"
        skipped = [
            f"{name} {regime}: {why}" for name, by in timing.skipped.items() for regime, why in by.items()
        ]
        if agg.notes or skipped:
            reason += "; " + "; ".join([*agg.notes, *(f"not timed: {s}" for s in skipped)])
        return self.result(
            passed=True,
            reason=reason,
            score=agg.score,
            speedup=agg.speedup,
            speedup_ci=ci,
            cases=tuple(cases),
            **done,
        )

    def baseline(self, ctx: JudgeContext, cases: list[CaseResult], done: dict[str, Any]) -> tuple[Any, Any]:
        """The context the timing stage runs in (its reference replaced by TimingConfig.baseline, its
        candidate compiled with TimingConfig.compile_candidate) and the re-check that judges against the eager
        reference; the task's own reference and candidate: (ctx, None)."""
        spec = self.p.config.timing.baseline
        compiled = self.p.config.timing.compile_candidate
        if spec in ("", "eager") and not compiled:
            return ctx, None
        from evaluators.correctness.stage import check_call
        from evaluators.timing.baselines import (
            COMPILE,
            RIVAL,
            UNAVAILABLE,
            BaselineUnavailable,
            load_baseline,
        )

        try:
            timed_against = self.rival() if spec == RIVAL else load_baseline(spec, ctx.reference)
            timed = dataclasses.replace(ctx, reference=timed_against)
        except BaselineUnavailable as exc:
            self.stop(f"{UNAVAILABLE}: {exc}", cases=tuple(cases), **done)
        if compiled:  # the candidate as a compiled region runs it; its last timed call is re-checked
            timed = dataclasses.replace(timed, candidate=load_baseline(COMPILE, ctx.candidate))

        def judged_against_eager(_ctx: JudgeContext, *args: Any) -> Any:
            return check_call(ctx, *args)

        return timed, judged_against_eager

    def rival(self) -> Callable[..., Any]:
        """The entry of TimingConfig.rival_source: a program the same search judged earlier (it passed this
        cascade's checks then), imported from the worker's scratch directory as the candidate is. It runs
        inside the worker's namespace sandbox like everything here; the in-process guards attribute only the
        candidate's file, and the rival is not static-checked again: it is the run's own pick, not new
        code."""
        from evaluators.timing.baselines import BaselineUnavailable

        source = self.p.config.timing.rival_source
        if not source.strip():
            raise BaselineUnavailable("the baseline is a rival, and no rival_source was given")
        path = self.p.workdir / RIVAL_FILE
        path.write_text(source)
        try:
            module = _import_file(RIVAL_MODULE, path)
        except BaseException as exc:
            raise BaselineUnavailable(f"the rival does not import: {_brief(exc)}") from None
        entry = getattr(module, self.p.task.entry, None)
        if not callable(entry):
            raise BaselineUnavailable(f"the rival defines no callable {self.p.task.entry!r}")
        return entry

    # --- helpers --------------------------------------------------------------------------------------

    def enter(self, stage: Stage, progress: str) -> None:
        self.stage = stage
        self._clock(progress.replace("-", "_"))
        self.p.progress(progress)

    def add_seconds(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def _clock(self, name: str | None) -> None:
        """Close the running stage's clock and (with a name) start the next one."""
        now = time.monotonic()
        if self._mark is not None:
            last, since = self._mark
            self.seconds[last] = self.seconds.get(last, 0.0) + now - since
        self._mark = (name, now) if name else None

    def check_sandbox(self, sandbox: Any) -> None:
        findings = tuple(sandbox.findings()) if sandbox is not None else ()
        if findings:
            self.stop(_flag_reason(findings), hacks=findings)

    def stop(self, reason: str, **extra: Any) -> NoReturn:
        raise _Stop(self.result(passed=False, reason=reason, **extra))

    def result(self, *, passed: bool, reason: str, **extra: Any) -> EvalResult:
        self._clock(None)
        seconds = {k: round(v, 4) for k, v in self.seconds.items()}
        print(f"{STAGE_SECONDS_TAG} {json.dumps(seconds)}", file=sys.stderr, flush=True)
        hacks = tuple(extra.pop("hacks", ()))
        score = extra.pop("score", 0.0)
        return EvalResult(
            task=self.p.task.name,
            candidate_sha=self.sha,
            backend=self.p.backend.name,
            regime=self.p.task.regime,
            stage=self.stage,
            passed=passed and not hacks,
            reason=reason,
            score=0.0 if hacks or not passed else float(score),
            hacks=hacks,
            hardware=self.p.hardware,
            duration_s=time.monotonic() - self.start,
            **extra,
        )


def _with_floors(case: str, timing: Any) -> dict[str, RegimeTiming]:
    """A case's timings per regime, each with the roofline floor the timing stage computed for it."""
    floors = timing.floors_us.get(case, {})
    return {
        regime: dataclasses.replace(t, floor_us=floors.get(regime))
        for regime, t in timing.timings.get(case, {}).items()
    }


def _flag_reason(findings: tuple[HackFinding, ...] | list[HackFinding]) -> str:
    shown = "; ".join(f"{f.kind}: {f.evidence}" for f in list(findings)[:3])
    return f"flagged: {shown}"


def _smallest_case(task: Task) -> Case:
    """The case with the fewest elements, judged from its integer parameters (cheap: no inputs built)."""

    def size(case: Case) -> int:
        product = 1
        for value in case.params.values():
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                product *= value
        return product

    generated = [c for c in task.cases if not c.is_captured] or list(task.cases)
    return min(generated, key=size)


def _import_candidate(path: Path) -> ModuleType:
    return _import_file(CANDIDATE_MODULE, path)


def _import_file(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _brief(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text if len(text) <= REASON_LIMIT else text[:REASON_LIMIT] + " ..."


def _candidate_traceback(exc: BaseException, path: Path) -> str:
    """The frames inside the candidate plus the error text (Triton's CompilationError shows the source)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
    parts = traceback.format_list(frames) + traceback.format_exception_only(type(exc), exc)
    cause = exc.__cause__
    if cause is not None:
        parts += ["caused by: ", *traceback.format_exception_only(type(cause), cause)]
    text = "".join(parts).replace(str(path), CANDIDATE_FILE).strip()
    if len(text) > REASON_LIMIT:
        text = "... " + text[-REASON_LIMIT:]
    return text
