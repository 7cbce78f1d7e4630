"""evaluators.timing.placement: workers kept off the timing cores, the timing thread pinned onto its core
inside the GPU lock (and only there), the core's clock warmed up first; against a recording fake of the OS
calls, the real OS in a subprocess, and time_cases end to end on a CPU backend."""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import textwrap

import pytest

from evaluators.timing.core_plan import CorePlan
from evaluators.timing.placement import Affinity, pinned, place_process, place_worker, warm_cpu

PLAN = CorePlan(timing_cpu=7, reserved=frozenset({7, 15}), shared=frozenset({0, 1, 2, 3}), note="test plan")
needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity here")


class RecordingAffinity(Affinity):
    def __init__(self, tids=(0, 101, 102), refuse: set[int] | None = None, available: bool = True) -> None:
        self.masks = {tid: {0, 1, 2, 3, 7, 15} for tid in tids}
        self.calls: list[tuple[int, set[int]]] = []
        self.refuse = refuse or set()
        self._available = available

    @property
    def available(self) -> bool:
        return self._available

    def threads(self) -> list[int]:
        return list(self.masks)

    def get(self, tid: int) -> set[int]:
        return set(self.masks[tid])

    def set(self, tid: int, cpus) -> None:
        if set(cpus) & self.refuse:
            raise OSError(22, "Invalid argument")
        self.calls.append((tid, set(cpus)))
        self.masks[tid] = set(cpus)


def test_placing_a_process_moves_every_thread_off_the_reserved_cores():
    os_calls = RecordingAffinity()
    note = place_process(PLAN, os_calls)
    assert all(mask == {0, 1, 2, 3} for mask in os_calls.masks.values())
    assert note == "3 threads kept off cpus [7, 15]"


def test_pinning_holds_the_core_for_the_block_and_gives_it_back():
    os_calls = RecordingAffinity()
    place_process(PLAN, os_calls)
    with pinned(PLAN, os_calls) as where:
        assert where == "on cpu 7"
        assert os_calls.masks[0] == {7} and os_calls.masks[101] == {0, 1, 2, 3}  # only the calling thread
    assert os_calls.masks[0] == {0, 1, 2, 3}
    with pytest.raises(RuntimeError), pinned(PLAN, os_calls):
        raise RuntimeError("a sample failed")
    assert os_calls.masks[0] == {0, 1, 2, 3}  # given back on the way out of an error too


def test_where_the_os_refuses_nothing_is_pinned_and_the_note_says_why():
    refusing = RecordingAffinity(refuse={7})
    with pinned(PLAN, refusing) as where:
        assert where.startswith("not pinned: the OS refused cpu 7 (OSError")
    assert refusing.calls == []
    elsewhere = RecordingAffinity(available=False)
    with pinned(PLAN, elsewhere) as where:
        assert where == "not pinned: this platform cannot set CPU affinity"
    assert place_process(PLAN, elsewhere) == "not placed: this platform cannot set CPU affinity"
    assert place_process(PLAN, RecordingAffinity(refuse={0})).startswith("not placed: the OS refused")
    inactive = CorePlan(None, note="not pinned: 2 CPUs")
    with pinned(inactive, RecordingAffinity()) as where:
        assert where == "not pinned: 2 CPUs"
    assert place_process(inactive, RecordingAffinity()) == "not pinned: 2 CPUs"


def test_a_backend_that_never_times_is_not_placed():
    class Interpreter:
        can_time = False
        device = "cpu"

    assert place_worker({"timing": {}}, Interpreter()) == "not placed: this backend does not time"


@needs_affinity
def test_the_real_os_pins_one_thread_and_keeps_the_others_off_the_core():
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two CPUs")
    script = textwrap.dedent(
        f"""
        import os, threading
        from evaluators.timing.core_plan import CorePlan
        from evaluators.timing.placement import pinned, place_process
        plan = CorePlan({allowed[-1]}, frozenset({{{allowed[-1]}}}), frozenset({allowed[:-1]}), "test")
        go, done = threading.Event(), threading.Event()
        seen = {{}}
        def other():
            go.wait()
            seen["other"] = os.sched_getaffinity(0)
            done.set()
        t = threading.Thread(target=other)
        t.start()
        print(place_process(plan))
        with pinned(plan) as where:
            seen["main"] = os.sched_getaffinity(0)
            go.set()
            done.wait()
        print(where, sorted(seen["main"]), sorted(seen["other"]), sorted(os.sched_getaffinity(0)))
        t.join()
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    placed, pinned_line = done.stdout.strip().splitlines()
    assert placed == f"2 threads kept off cpus [{allowed[-1]}]"
    shared = str(allowed[:-1])
    assert pinned_line == f"on cpu {allowed[-1]} [{allowed[-1]}] {shared} {shared}"


# --- the core's clock ------------------------------------------------------------------------------------


class StepClock:
    """Each work chunk takes the next of `chunk_s` (then the last one for ever): a core clocking up."""

    def __init__(self, chunk_s: list[float]) -> None:
        self.t, self.chunks, self.running = 0.0, list(chunk_s), False

    def __call__(self) -> float:
        return self.t

    def work(self) -> None:
        self.t += self.chunks.pop(0) if len(self.chunks) > 1 else self.chunks[0]


def test_the_warm_up_spins_until_the_chunks_stop_getting_faster():
    clock = StepClock([400e-6, 300e-6, 200e-6, 150e-6, 100e-6])  # then 100 us for ever
    out = warm_cpu(50.0, min_ms=1.0, clock=clock, work=clock.work)
    assert out.steady and out.chunks == 4 + 5  # four climbing chunks, then five alike
    assert out.elapsed_ms == pytest.approx((400 + 300 + 200 + 150 + 500) / 1e3)
    assert "steady" in out.describe()


def test_the_warm_up_takes_its_minimum_and_stops_at_its_cap():
    flat = StepClock([10e-6])
    out = warm_cpu(50.0, min_ms=1.0, clock=flat, work=flat.work)
    assert out.steady and out.elapsed_ms == pytest.approx(1.0)  # steady at once, but not before min_ms
    jumpy = StepClock([10e-6, 20e-6] * 10_000)
    out = warm_cpu(5.0, min_ms=1.0, clock=jumpy, work=jumpy.work)
    assert not out.steady and 5.0 <= out.elapsed_ms < 5.1 and "not steady" in out.describe()


# --- inside the GPU lock, end to end -------------------------------------------------------------------


@needs_affinity
def test_time_cases_pins_the_wall_regime_inside_the_gpu_lock_and_nowhere_else(tmp_path):
    from evaluators.timing import time_cases
    from tests.evaluators.test_timing import (
        FAST,
        SCALE_INPUTS,
        SCALE_REF,
        RecordingCheck,
        make_ctx,
        write_task,
    )

    before = os.sched_getaffinity(0)
    cpu = max(before)
    plan = CorePlan(cpu, frozenset({cpu}), frozenset(before - {cpu}) or frozenset(before), "test plan")
    state = {"held": False}
    seen: list[tuple[bool, frozenset[int]]] = []
    collecting: list[bool] = []

    def traced(x):
        seen.append((state["held"], frozenset(os.sched_getaffinity(0))))
        collecting.append(gc.isenabled())
        return x * 2.0 + 1.0

    @contextlib.contextmanager
    def hold():
        state["held"] = True
        try:
            yield False
        finally:
            state["held"] = False

    lines: list[str] = []
    ctx = make_ctx(write_task(tmp_path, SCALE_REF, SCALE_INPUTS), traced)
    ctx.log = lines.append
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck(), gpu_lock=hold, cpu_plan=plan)
    assert report.passed, report.reason
    timed = [s for s in seen if s[0]]
    assert len(timed) >= 2 * (FAST.min_samples + 5)  # warm-up and samples of both cases: all in the lock...
    assert all(mask == {cpu} for _, mask in timed)  # ...and all on the timing core
    assert all(mask == frozenset(before) for held, mask in seen if not held)  # the re-check's judge etc.
    assert os.sched_getaffinity(0) == before
    assert not any(collecting) and gc.isenabled()  # no garbage collection inside a sample, back on after
    walls = [line for line in lines if line.startswith("timed")]
    assert len(walls) == 2 and all(f"on cpu {cpu}, cpu warm-up" in line for line in walls)
    assert all("speedup CI +-" in line and "sync/sync samples" in line for line in walls)


def test_a_graph_tasks_wall_look_stays_short_no_clock_spin_one_warm_up_round(tmp_path):
    import dataclasses

    from evaluators.config import TimingConfig
    from evaluators.timing import time_cases
    from tests.evaluators.test_timing import (
        FAST,
        SCALE_INPUTS,
        SCALE_REF,
        RecordingCheck,
        make_ctx,
        write_task,
    )

    calls = {"n": 0}

    def counted(x):
        calls["n"] += 1
        return x * 2.0 + 1.0

    cfg = TimingConfig(**{**FAST.__dict__, "regimes": ("graph", "wall"), "warmup_ms": 0.0, "min_samples": 5})
    ctx = make_ctx(write_task(tmp_path, SCALE_REF, SCALE_INPUTS, regime="graph"), counted, config=cfg)
    lines: list[str] = []
    ctx = dataclasses.replace(ctx, log=lines.append)
    report = time_cases(ctx, [ctx.task.cases[0]], check_call=RecordingCheck(), cpu_plan=PLAN)
    assert report.passed and "wall" in report.timings["small"]  # the graph regime is skipped on a CPU
    (line,) = [x for x in lines if x.startswith("timed")]
    assert "cpu warm-up" not in line and "sync/sync samples" in line
    wall = report.timings["small"]["wall"]
    pairs = wall.candidate.samples + wall.candidate.outliers
    assert calls["n"] == FAST.wall_calls * (1 + pairs)  # one warm-up round, then the samples
