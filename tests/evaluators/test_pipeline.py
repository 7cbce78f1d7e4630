"""The cascade inside a worker: which stage stops a candidate, what the reason says, how findings score.

The cascade itself only ever runs inside a worker (the runtime sandbox installs an irrevocable audit hook), so
these tests go through a pool; its pure helpers are tested directly.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from pool_tasks import GOOD, at_import, shared_pool, write_task

from evaluators.config import EvalConfig, TimingConfig
from evaluators.context import JudgeContext
from evaluators.gpu_lock import GpuLock
from evaluators.pipeline import Prepared, _candidate_traceback, _Cascade, _smallest_case, _Stop
from evaluators.pool import WorkerPool
from evaluators.result import CaseResult, HackFinding, Hardware, RegimeTiming, Stage, TimingStats
from evaluators.scoring import Aggregate
from evaluators.task import Case, load_task
from evaluators.timing import TimingReport

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task(tmp_path_factory.mktemp("pipeline"))


@pytest.fixture(scope="module")
def pool() -> WorkerPool:
    return shared_pool()


def test_smallest_case_is_judged_by_its_sizes_and_never_a_captured_one(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path))
    cases = (
        Case("big", {"tokens": 64, "d": 128, "dtype": "bfloat16"}),
        Case("small", {"tokens": 1, "d": 2048, "flag": True}),
        Case("captured:x", {"captured": "x.pt"}, captured=tmp_path / "x.pt"),
    )
    assert _smallest_case(task.__class__(**{**task.__dict__, "cases": cases})).name == "small"


def test_candidate_traceback_keeps_the_candidates_frames_under_a_short_name(tmp_path: Path) -> None:
    path = tmp_path / "candidate.py"
    path.write_text("def f():\n    return 1 / 0\n")
    code = compile(path.read_text(), str(path), "exec")
    scope: dict = {}
    exec(code, scope)
    try:
        scope["f"]()
    except ZeroDivisionError as exc:
        text = _candidate_traceback(exc, path)
    assert 'File "candidate.py", line 2, in f' in text and "ZeroDivisionError: division by zero" in text
    assert str(tmp_path) not in text and "test_pipeline.py" not in text


def test_static_stage_stops_code_that_does_not_parse(pool: WorkerPool, task: Path) -> None:
    r = pool.evaluate(task, GOOD + "\ndef broken(:\n")
    assert r.stage is Stage.STATIC and not r.passed and "does not parse" in r.reason and not r.hacks


def test_static_findings_flag_the_candidate_before_it_runs(pool: WorkerPool, task: Path) -> None:
    r = pool.evaluate(task, at_import("import subprocess\nsubprocess.run(['true'])"))
    assert r.stage is Stage.STATIC and r.hacks and r.score == 0.0 and not r.passed
    assert all(h.detector == "static" for h in r.hacks)
    assert r.reason.startswith("static checks:")


def test_runtime_findings_flag_what_static_checks_were_told_to_skip(pool: WorkerPool, task: Path) -> None:
    source = at_import("import os\nos.environ['KERNELBOT_PWNED'] = '1'")
    r = pool.evaluate(task, source, config=EvalConfig(static_checks=False))
    assert not r.passed and r.score == 0.0
    assert r.hacks and all(h.detector == "runtime" for h in r.hacks), r.reason
    assert r.reason.startswith("flagged:")


def test_a_broken_kernel_fails_at_compile_with_the_kernel_error(pool: WorkerPool, task: Path) -> None:
    r = pool.evaluate(task, GOOD.replace("tl.load(x_ptr + offs, mask=mask)", "tl.no_such_load(x_ptr + offs)"))
    assert r.stage is Stage.COMPILE and "no_such_load" in r.reason


def test_pytorch_fallback_is_flagged(pool: WorkerPool, task: Path) -> None:
    r = pool.evaluate(task, GOOD.replace("    return out\n", "    return x * 2.0 + 1.0\n"))
    assert not r.passed and r.score == 0.0
    assert "pytorch_fallback" in {h.kind for h in r.hacks}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="timing needs a CUDA GPU")
def test_triton_cuda_times_a_correct_candidate_and_reports_both_regimes() -> None:
    task = EXAMPLES / "silu_and_mul"
    source = next((task / "candidates").glob("*.py")).read_text()
    with WorkerPool("triton-cuda", size=2) as pool:
        r = pool.evaluate(task, source)
    assert r.stage is Stage.TIMING and r.passed, f"{r.reason}\n{r.logs}"
    assert r.speedup is not None and r.speedup_ci is not None and r.score == pytest.approx(r.speedup)
    timed = [c for c in r.cases if c.timings]
    assert timed and all(set(c.timings) == {"graph", "wall"} for c in timed)
    assert r.hardware.device and r.hardware.sm_count > 0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="timing needs a CUDA GPU")
def test_triton_cuda_times_a_candidate_under_torch_compile() -> None:
    """A kernel an engine calls inside a compiled region, timed there: the candidate's entry under
    torch.compile against torch.compile of the reference, its last timed calls re-checked against eager."""
    task = EXAMPLES / "silu_and_mul"
    source = next((task / "candidates").glob("*.py")).read_text()
    config = EvalConfig(timing=TimingConfig(baseline="compile", compile_candidate=True))
    with WorkerPool("triton-cuda", size=1) as pool:
        r = pool.evaluate(task, source, config=config)
    assert r.stage is Stage.TIMING and r.passed, f"{r.reason}\n{r.logs}"
    assert any(c.timings for c in r.cases) and r.speedup is not None


# --- the timing stage's plumbing, without a GPU -------------------------------------------------------------
# time_cases / aggregate are the timing helper's (tested in their own files); here they are replaced by
# recorders so that what the pipeline does around them (GPU lock, progress, merging, verdicts) runs on CPU.


class _TimingBackend:
    name = "triton-cuda"
    can_time = True
    device_index = 0
    device = "cpu"


def _regime(speedup: float) -> RegimeTiming:
    stats = TimingStats(median_us=10.0, cv=0.001, samples=30)
    return RegimeTiming(
        reference=stats, candidate=stats, speedup=speedup, ci_low=speedup - 0.1, ci_high=speedup + 0.1
    )


def _cascade(
    tmp_path: Path,
    progress: list[str],
    *,
    backend: object | None = None,
    config: EvalConfig | None = None,
    run_lock: GpuLock | None = None,
) -> _Cascade:
    task = load_task(write_task(tmp_path))
    prepared = Prepared(
        task=task,
        backend=backend or _TimingBackend(),  # type: ignore[arg-type]
        config=config or EvalConfig(),
        seeds=(1,),
        source=GOOD,
        workdir=tmp_path,
        hardware=Hardware(backend="triton-cuda", device="fake"),
        reference=lambda x: x,
        progress=progress.append,
        run_lock=run_lock,
    )
    return _Cascade(prepared)


def _timing_stage(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    timing: TimingReport,
    agg: Aggregate,
    scored: list[dict] | None = None,
):
    monkeypatch.setenv("KERNELBOT_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setattr("evaluators.gpu_lock.device_key", lambda index: f"fake{index}")
    held: list[bool] = []
    warm: list[bool] = []

    def time_cases(ctx: object, cases: list, *, gpu_lock) -> TimingReport:
        probe = GpuLock("fake0", tmp_path / "locks")
        for _ in range(2):  # two cases or regimes: the lock is taken for each one's sampling only
            with gpu_lock() as gpu_warm:
                warm.append(gpu_warm)
                held.append(not probe.acquire(timeout=0))  # busy: the cascade holds it
            assert probe.acquire(timeout=0)  # free between the two
            probe.release()
        return timing

    monkeypatch.setattr("evaluators.timing.stage.time_cases", time_cases)
    asked = scored if scored is not None else []

    def aggregate(task: object, cases: list, hardware: object, **options: object) -> Aggregate:
        asked.append(options)
        return agg

    monkeypatch.setattr("evaluators.scoring.aggregate", aggregate)
    progress: list[str] = []
    cascade = _cascade(tmp_path, progress)
    cases = [CaseResult(name="n257", params={"n": 257}, passed=True), CaseResult("n1000", {"n": 1000}, True)]
    report = SimpleNamespace(reference_precision="float64", timeable=[])
    try:
        result = cascade.timing(SimpleNamespace(sandbox=None), cases, report)  # type: ignore[arg-type]
    except _Stop as stop:
        result = stop.result
    assert held == [True, True] and progress == ["timing", "wait-lock", "timing", "wait-lock", "timing"]
    # The first hold finds a lock never let go (a cold GPU); the second one finds it let go just now.
    assert warm == [False, True]
    assert GpuLock("fake0", tmp_path / "locks").acquire(timeout=0)  # released afterwards
    return result


def test_timing_results_are_merged_into_the_cases_and_scored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    timing = TimingReport(timings={"n257": {"graph": _regime(1.5), "wall": _regime(1.2)}})
    timing.skipped = {"n1000": {"graph": "reference cannot be captured"}}
    agg = Aggregate(speedup=1.5, ci=(1.4, 1.6), score=1.5, notes=["n1000 scored in the wall regime"])
    scored: list[dict] = []
    r = _timing_stage(tmp_path, monkeypatch, timing, agg, scored)
    assert scored == [{"single_case_check": True}]  # timed against the task's reference: class 14 applies
    assert (
        r.passed and r.correct and r.stage is Stage.TIMING and r.score == 1.5 and r.speedup_ci == (1.4, 1.6)
    )
    assert set(r.cases[0].timings) == {"graph", "wall"} and r.cases[1].timings == {}
    assert "speedup 1.500x (graph)" in r.reason and "reference cannot be captured" in r.reason
    assert "n1000 scored in the wall regime" in r.reason


def test_beyond_roofline_is_quarantined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    roof = HackFinding("beyond_roofline", "0.1 us is under the 2 us floor")
    timing = TimingReport(timings={"n257": {"graph": _regime(50.0)}}, findings=[roof], passed=False)
    r = _timing_stage(tmp_path, monkeypatch, timing, Aggregate(speedup=None, ci=None, score=0.0))
    assert r.quarantined and not r.passed and r.score == 0.0 and r.hacks == (roof,) and r.correct


def test_a_failed_timing_or_an_aggregate_finding_scores_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    failed = TimingReport(passed=False, reason="post-timing re-check failed: n257 graph")
    r = _timing_stage(tmp_path, monkeypatch, failed, Aggregate(speedup=None, ci=None, score=0.0))
    assert not r.passed and r.score == 0.0 and r.reason == "post-timing re-check failed: n257 graph"
    one_case = HackFinding("single_case_aggregate", "without n257 the rest is a slowdown")
    agg = Aggregate(speedup=3.0, ci=(2.9, 3.1), score=3.0, findings=[one_case])
    r = _timing_stage(tmp_path / "b", monkeypatch, TimingReport(), agg)
    assert not r.passed and r.score == 0.0 and r.hacks == (one_case,) and not r.quarantined


def _judged(cascade: _Cascade, tmp_path: Path) -> JudgeContext:
    """The context the timing stage gets for a candidate that doubles and shifts (its stages passed)."""

    def candidate(x: torch.Tensor) -> torch.Tensor:
        return x * 2.0 + 1.0

    return JudgeContext(
        task=cascade.p.task,
        backend=cascade.p.backend,
        config=cascade.p.config,
        seeds=(1,),
        reference=cascade.p.reference,
        candidate=candidate,
        candidate_module=SimpleNamespace(),  # type: ignore[arg-type]
        candidate_path=tmp_path / "candidate.py",
        candidate_source=GOOD,
    )


def test_a_compiled_candidate_is_timed_under_torch_compile_and_judged_against_eager(tmp_path: Path) -> None:
    """TimingConfig.compile_candidate (a kernel the engine calls inside a compiled region): the timing stage
    gets the candidate wrapped in torch.compile, the reference as the baseline names it, and the re-check
    still judges against the eager reference."""
    cascade = _cascade(tmp_path, [])
    cascade.p.config = EvalConfig(timing=TimingConfig(baseline="compile", compile_candidate=True))

    ctx = _judged(cascade, tmp_path)
    candidate = ctx.candidate
    timed, check = cascade.baseline(ctx, [], {})
    assert getattr(timed.candidate, "_torchdynamo_orig_callable", None) is candidate
    assert getattr(timed.reference, "_torchdynamo_orig_callable", None) is ctx.reference
    assert check is not None
    cascade.p.config = EvalConfig()
    assert cascade.baseline(ctx, [], {}) == (ctx, None)  # as it is: nothing swapped


def test_a_rival_is_imported_from_its_source_and_timed_where_the_reference_was(tmp_path: Path) -> None:
    """TimingConfig.baseline "rival" (a search's final comparison of two of its programs): the timing stage
    gets the rival's entry as the other side of its pairs, the candidate stays as it is, and the re-check
    still judges against the eager reference. A rival that cannot be used is a missing baseline, never the
    candidate's failure."""
    cascade = _cascade(tmp_path, [])
    rival = "def scale_shift(x):\n    return ('rival', x)\n"
    cascade.p.config = EvalConfig(timing=TimingConfig(baseline="rival", rival_source=rival))

    ctx = _judged(cascade, tmp_path)
    candidate = ctx.candidate
    timed, check = cascade.baseline(ctx, [], {})
    assert timed.reference(3) == ("rival", 3) and timed.candidate is candidate and check is not None
    assert (tmp_path / "rival.py").read_text() == rival
    for source, why in [
        ("", "no rival_source"),
        ("def other(x):\n    return x\n", "no callable 'scale_shift'"),
        ("import not_a_module_anywhere\n", "does not import: ModuleNotFoundError"),
    ]:
        cascade.p.config = EvalConfig(timing=TimingConfig(baseline="rival", rival_source=source))
        with pytest.raises(_Stop) as stopped:
            cascade.baseline(ctx, [], {})
        result = stopped.value.result
        assert result.reason.startswith("baseline unavailable: ") and why in result.reason, result.reason
        assert not result.passed


@pytest.mark.parametrize("baseline", ["eager", "compile"])
def test_a_run_lock_is_shared_while_preparing_and_exclusive_while_sampling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, baseline: str
) -> None:
    """TimingConfig.run_lock (a confirmation's processes at once, the device lock held by the caller): the
    worker shares the run's lock while it uses the GPU and holds it alone while it samples, draining the
    device on either side; the device's own lock is left to the caller. Against torch.compile the
    baseline's first call (where Inductor tunes its kernels) is made alone too."""
    locks = tmp_path / "locks"
    locks.mkdir()
    monkeypatch.setenv("KERNELBOT_LOCK_DIR", str(locks))
    monkeypatch.setattr("evaluators.gpu_lock.device_key", lambda index: f"fake{index}")
    events: list[str] = []

    class Backend(_TimingBackend):
        def synchronize(self) -> None:
            events.append("sync")

    def time_cases(ctx: object, cases: list, *, gpu_lock, **more) -> TimingReport:
        assert ("first_call_lock" in more) == (baseline == "compile")
        if "first_call_lock" in more:
            assert more["first_call_lock"] is gpu_lock
        other = GpuLock("confirm-test", locks)  # another process of the same run
        assert other.acquire(shared=True, timeout=0)  # preparing beside this one is allowed...
        other.release()
        assert not other.acquire(timeout=0)  # ...sampling beside it is not
        with gpu_lock():
            events.append("sampling")
            assert not other.acquire(shared=True, timeout=0)  # nobody else touches the GPU now
            assert GpuLock("fake0", locks).acquire(timeout=0)  # the device lock: the caller's business
        assert other.acquire(shared=True, timeout=0)  # shared again afterwards
        other.release()
        return TimingReport(timings={"n257": {"graph": _regime(1.5)}})

    monkeypatch.setattr("evaluators.timing.stage.time_cases", time_cases)
    monkeypatch.setattr(
        "evaluators.scoring.aggregate", lambda *a, **k: Aggregate(speedup=1.5, ci=(1.4, 1.6), score=1.5)
    )
    monkeypatch.setattr(_Cascade, "baseline", lambda self, ctx, cases, done: (ctx, None))
    run_lock = GpuLock("confirm-test", locks)
    run_lock.acquire(shared=True)  # as prepare() takes it before the task's first GPU call
    progress: list[str] = []
    timing = TimingConfig(caller_holds_gpu=True, run_lock="confirm-test", baseline=baseline)
    cascade = _cascade(
        tmp_path, progress, backend=Backend(), config=EvalConfig(timing=timing), run_lock=run_lock
    )
    cases = [CaseResult(name="n257", params={"n": 257}, passed=True)]
    report = SimpleNamespace(reference_precision="float64", timeable=[])
    result = cascade.timing(SimpleNamespace(sandbox=None), cases, report)  # type: ignore[arg-type]
    assert result.passed and events == ["sync", "sampling", "sync"]
    assert progress == ["timing", "wait-lock", "timing"]
    assert run_lock.held  # still shared: the worker keeps it until it exits
    run_lock.release()


def test_prepare_takes_the_run_lock_shared_before_the_task_check(tmp_path: Path, monkeypatch) -> None:
    from evaluators.job import Job
    from evaluators.pipeline import prepare

    locks = tmp_path / "locks"
    locks.mkdir()
    monkeypatch.setenv("KERNELBOT_LOCK_DIR", str(locks))
    timing = TimingConfig(caller_holds_gpu=True, run_lock="confirm-prep")
    job = Job(str(write_task(tmp_path)), GOOD, EvalConfig(timing=timing).to_dict(), (1,), "n")
    prepared = prepare(
        job, _TimingBackend(), Hardware(backend="triton-cuda"), workdir=tmp_path, progress=print
    )  # type: ignore[arg-type]
    assert prepared.run_lock is not None and prepared.run_lock.held
    assert GpuLock("confirm-prep", locks).acquire(shared=True, timeout=0)  # shared: others may prepare too
    assert not GpuLock("confirm-prep", locks).acquire(timeout=0)  # but none may sample meanwhile
    prepared.run_lock.release()
    # Without a caller holding the device nothing is taken here (the timing stage locks per sampling).
    job = Job(str(write_task(tmp_path / "b")), GOOD, EvalConfig().to_dict(), (1,), "n")
    assert (
        prepare(
            job, _TimingBackend(), Hardware(backend="triton-cuda"), workdir=tmp_path, progress=print
        ).run_lock
        is None
    )  # type: ignore[arg-type]
