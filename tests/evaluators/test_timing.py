"""evaluators.timing on the CPU: the sampling loop with synthetic measures, the input sets, and time_cases'
wall regime end to end on CPU tensors through a timing-capable CPU backend (the graph regime needs a GPU:
tests/evaluators/test_timing_gpu.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import random
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from evaluators import stats
from evaluators.config import EvalConfig, TimingConfig
from evaluators.context import JudgeContext
from evaluators.result import Hardware
from evaluators.task import load_task
from evaluators.timing import CaseTimer, TimingReport, derive_seed, time_cases
from evaluators.timing.inputs import InputSet, changed_values, graph_input_sets, run_and_diff, tensor_paths
from evaluators.timing.sampler import sample_interleaved, summarize, warm_up
from evaluators.timing.wall import WallRunner

FAST = TimingConfig(
    warmup_ms=1.0,
    min_samples=5,
    max_samples=12,
    cv_target=0.5,
    time_cap_s=0.5,
    wall_calls=3,
    wall_ci_target=0.5,
    wall_max_samples=12,
    cpu_warmup_ms=1.0,
    regimes=("wall",),
)


# --- the sampling loop ------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.001
        return self.t


def test_sampler_stops_on_cv_and_pairs_rounds():
    cfg = TimingConfig(min_samples=10, max_samples=200, cv_target=0.01, time_cap_s=100.0, min_time_s=0.0)
    order = []
    ref = lambda: order.append("r") or 10.0
    cand = lambda: order.append("c") or 5.0
    s = sample_interleaved(ref, cand, cfg, random.Random(0), clock=FakeClock())
    assert s.stopped == "cv"
    assert len(s.reference) == len(s.candidate) == 10
    rounds = [tuple(order[i : i + 2]) for i in range(0, len(order), 2)]
    assert set(rounds) == {("r", "c"), ("c", "r")}  # random order within each round
    timing = summarize(s)
    assert timing.speedup == pytest.approx(2.0) and timing.reference.median_us == 10.0


def test_sampler_respects_time_and_sample_caps():
    noisy = random.Random(1)
    cfg = TimingConfig(min_samples=5, max_samples=30, cv_target=1e-9, time_cap_s=1e9)
    s = sample_interleaved(lambda: noisy.gauss(10, 1), lambda: noisy.gauss(10, 1), cfg, random.Random(0))
    assert s.stopped == "sample cap" and len(s.reference) == 30
    clock = FakeClock()
    cfg = TimingConfig(min_samples=5, max_samples=10_000, cv_target=1e-9, time_cap_s=0.02)
    s = sample_interleaved(
        lambda: noisy.gauss(10, 1), lambda: noisy.gauss(10, 1), cfg, random.Random(0), clock=clock
    )
    assert s.stopped == "time cap" and len(s.reference) < 50


def test_sampler_waits_for_the_speedup_to_converge_too():
    # Both medians are sharp (most samples sit on one value) but the per-round ratio scatters: the
    # speedup criterion keeps sampling where the medians alone would have stopped at min_samples.
    noisy = random.Random(3)
    ref = lambda: 10.0 if noisy.random() < 0.6 else noisy.choice([9.9, 10.1])
    cand = lambda: 5.0 if noisy.random() < 0.6 else noisy.choice([4.95, 5.05])
    medians_only = TimingConfig(
        min_samples=15, max_samples=400, cv_target=0.01, speedup_se_target=0.0, time_cap_s=1e9, min_time_s=0
    )
    s = sample_interleaved(ref, cand, medians_only, random.Random(0), clock=FakeClock())
    assert s.stopped == "cv" and len(s.reference) == 15
    both = TimingConfig(
        min_samples=15, max_samples=400, cv_target=0.01, speedup_se_target=0.001, time_cap_s=1e9, min_time_s=0
    )
    s = sample_interleaved(ref, cand, both, random.Random(0), clock=FakeClock())
    ratios = [r / c for r, c in zip(s.reference, s.candidate, strict=True)]
    assert s.stopped == "cv" and len(s.reference) > 15
    assert stats.median_rel_se(stats.tukey_filter(ratios, min_rel_iqr=0.01)) <= 0.001


def test_sampler_takes_min_time_of_samples_before_stopping_on_convergence():
    # Converged after min_samples, but a ~1 us kernel gets there within milliseconds: sampling goes on until
    # min_time_s has passed (FakeClock advances 1 ms per reading), then stops on the convergence rule.
    cfg = TimingConfig(min_samples=10, max_samples=400, cv_target=0.01, time_cap_s=1.0, min_time_s=0.05)
    clock = FakeClock()
    s = sample_interleaved(lambda: 10.0, lambda: 5.0, cfg, random.Random(0), clock=clock)
    assert s.stopped == "cv" and len(s.reference) > 10 and s.elapsed_s >= 0.05


def test_final_candidate_runs_once_as_the_last_candidate_sample():
    calls = []
    noisy = itertools.cycle([1.0, 2.0, 3.0])
    cfg = TimingConfig(min_samples=4, max_samples=8, cv_target=1e-9, time_cap_s=1e9)
    timed = lambda: calls.append("timed") or next(noisy)
    final = lambda: calls.append("final") or 7.0
    s = sample_interleaved(lambda: next(noisy), timed, cfg, random.Random(0), final_candidate=final)
    assert calls[-1] == "final" and calls.count("final") == 1
    assert s.candidate[-1] == 7.0 and len(s.candidate) == len(s.reference) == 8


def test_warm_up_runs_every_measure_for_the_budget():
    counts = {"a": 0, "b": 0}
    rounds = warm_up(
        [lambda: counts.__setitem__("a", counts["a"] + 1), lambda: counts.__setitem__("b", counts["b"] + 1)],
        0.0,
    )
    assert rounds == 2 and counts == {"a": 2, "b": 2}


# --- input sets -------------------------------------------------------------------------------------------


def test_changed_values_is_nan_aware():
    a = torch.tensor([1.0, float("nan"), 3.0])
    assert changed_values(a, a.clone()) == 0
    b = a.clone()
    b[2] = 4.0
    assert changed_values(a, b) == 1
    assert changed_values(torch.arange(4), torch.arange(4) + 1) == 4


def test_small_inputs_alternate_over_more_sets():
    cfg = TimingConfig()
    small = ((torch.zeros(32768),), {"scale": 2.0})  # 128 KiB: the stability suite's ~1 us kernel
    big = ((torch.zeros(8192, 1024),), {})  # 32 MiB
    assert graph_input_sets(cfg, small) == cfg.small_input_sets == 4
    assert graph_input_sets(cfg, big) == cfg.graph_input_sets == 2
    assert graph_input_sets(dataclasses.replace(cfg, small_input_bytes=0), small) == 2


def test_run_and_diff_finds_the_mutated_argument():
    def ref(x, out, *, counter):
        counter += 1
        out.copy_(x * 2)
        return out

    inputs = ((torch.ones(4), torch.zeros(4)), {"counter": torch.zeros(2, dtype=torch.int32)})
    _, changed = run_and_diff(ref, inputs, lambda: None)
    assert changed == {(0, 0): 0, (0, 1): 4, (1, "counter"): 2}


def test_input_set_gives_each_call_its_own_restored_copy():
    seq = torch.tensor([1, 2, 3], dtype=torch.int32)
    table = torch.arange(30).reshape(3, 10)
    s = InputSet(((seq, table), {}), mutated=[(0, 0)], calls=4)
    assert s.calls == 4
    copies = [s.call(k)[0][0] for k in range(4)]
    assert len({t.data_ptr() for t in copies}) == 4 and all(t.data_ptr() != seq.data_ptr() for t in copies)
    assert all(s.call(k)[0][1] is table for k in range(4))  # read-only arguments are shared
    for t in copies:
        t += 5
    s.restore()
    assert all(torch.equal(t, seq) for t in copies)
    # Fresh values go into the same tensors: shared ones in place, mutated ones through the pristine copy.
    skipped = s.load(
        ((torch.tensor([7, 7, 7], dtype=torch.int32), torch.zeros(3, 10, dtype=torch.int64)), {})
    )
    assert skipped == [] and int(table.sum()) == 0
    s.restore()
    assert all(t.tolist() == [7, 7, 7] for t in copies)
    assert s.load(((torch.zeros(5, dtype=torch.int32), table), {})) == ["(0, 0)"]


def test_input_set_without_mutations_shares_everything():
    x = torch.ones(3)
    s = InputSet(((x,), {}), mutated=[], calls=5)
    assert all(s.call(k)[0][0] is x for k in range(5))
    s.restore()  # nothing to do
    assert list(tensor_paths(s.call(0))) == [((0, 0), x)]


# --- time_cases on the CPU ----------------------------------------------------------------------------------


class CpuTimingBackend:
    """A backend that times on the CPU (host clock, no sync) so the wall regime's control flow runs here."""

    name = "cpu-timing-test"
    can_time = True
    device = "cpu"

    def __init__(self) -> None:
        self.flushes = 0

    def synchronize(self) -> None:
        return None

    def flush_l2(self) -> None:
        self.flushes += 1

    def hardware(self) -> Hardware:
        return Hardware(backend=self.name, device="cpu")


def write_task(root: Path, reference: str, inputs: str, extra: str = "", regime: str = "wall") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(
        textwrap.dedent(
            f"""
            name = "t"
            entry = "f"
            regime = "{regime}"
            {extra}
            [[cases]]
            name = "small"
            n = 64
            [[cases]]
            name = "large"
            n = 4096
            """
        )
    )
    (root / "reference.py").write_text(textwrap.dedent(reference))
    (root / "inputs.py").write_text(textwrap.dedent(inputs))
    return root


SCALE_REF = """
    import torch

    def f(x):
        return x * 2.0 + 1.0
"""
SCALE_INPUTS = """
    import torch

    def make_inputs(case, seed, device):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(case["n"], generator=g).to(device),), {}
"""


def make_ctx(
    task_root: Path, candidate, config: TimingConfig = FAST, backend=None, seeds=(11, 22)
) -> JudgeContext:
    task = load_task(task_root)
    return JudgeContext(
        task=task,
        backend=backend or CpuTimingBackend(),
        config=EvalConfig(timing=config),
        seeds=seeds,
        reference=task.load_reference(),
        candidate=candidate,
        candidate_module=SimpleNamespace(),
        candidate_path=task_root / "candidate.py",
        candidate_source="",
        log=lambda line: None,
    )


class RecordingCheck:
    """Stands in for evaluators.correctness.check_call: recomputes the reference on the snapshot."""

    def __init__(self) -> None:
        self.calls = []

    def __call__(self, ctx, case, before, returned, after):
        self.calls.append((case.name, before, returned, after))
        args, kwargs = (tuple(t.clone() for t in before[0]), before[1])
        expected = ctx.reference(*args, **kwargs)
        untouched = all(torch.equal(a, b) for a, b in zip(args, after[0], strict=True))
        ok = torch.allclose(returned, expected) and untouched
        return SimpleNamespace(ok=ok, reason="" if ok else "return value differs from the reference")


def test_interpreter_backend_is_refused_politely(tmp_path):
    from evaluators.backends.triton_interpret import TritonInterpretBackend

    ctx = make_ctx(
        write_task(tmp_path, SCALE_REF, SCALE_INPUTS),
        lambda x: x * 2.0 + 1.0,
        backend=TritonInterpretBackend(),
    )
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck())
    assert isinstance(report, TimingReport)
    assert report.passed and report.timings == {} and "checks correctness only" in report.reason


def test_wall_regime_times_both_cases_and_rechecks_on_fresh_inputs(tmp_path):
    ctx = make_ctx(write_task(tmp_path, SCALE_REF, SCALE_INPUTS), lambda x: torch.add(x * 2.0, 1.0))
    check = RecordingCheck()
    report = time_cases(ctx, list(ctx.task.cases), check_call=check)
    assert report.passed, report.reason
    assert set(report.timings) == {"small", "large"}
    for case_timings in report.timings.values():
        wall = case_timings["wall"]
        assert wall.reference.samples + wall.reference.outliers >= FAST.min_samples
        assert wall.reference.median_us > 0 and wall.candidate.median_us > 0
        assert wall.ci_low <= wall.speedup <= wall.ci_high
    assert [c[0] for c in check.calls] == ["small", "large"]
    # The re-check ran on values that differ from the ones the candidate was timed on.
    cand_inputs = ctx.task.make_inputs(ctx.task.cases[0], derive_seed((11, 22), 0, "candidate"), "cpu")
    assert not torch.equal(check.calls[0][1][0][0], cand_inputs[0][0])


def test_graph_regime_on_a_cpu_device_is_skipped_with_a_reason(tmp_path):
    cfg = TimingConfig(**{**FAST.__dict__, "regimes": ("graph", "wall")})
    ctx = make_ctx(write_task(tmp_path, SCALE_REF, SCALE_INPUTS), lambda x: x * 2.0 + 1.0, config=cfg)
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck())
    assert report.passed
    assert "CUDA graphs need a CUDA device" in report.skipped["small"]["graph"]
    assert list(report.timings["small"]) == ["wall"]


HOST_REF = """
    import torch

    def f(x, n_cpu):
        return x * 2.0 + float(n_cpu.max())
"""
HOST_INPUTS = """
    import torch

    def make_inputs(case, seed, device):
        g = torch.Generator().manual_seed(seed)
        n = torch.arange(case["n"] % 7 + 1).to(device)
        return (torch.randn(case["n"], generator=g).to(device), n.cpu()), {}
"""


def test_a_call_reading_a_tensor_kept_on_the_cpu_is_not_timed_from_a_graph(tmp_path):
    """A graph replay would not redo the host read of n_cpu (the drift re-check caught a stale bound on
    the H200): the graph regime is skipped with why, and refused for a task whose regime is graph."""
    cfg = TimingConfig(**{**FAST.__dict__, "regimes": ("graph", "wall")})

    def candidate(x, n):
        return x * 2.0 + float(n.max())

    ctx = make_ctx(write_task(tmp_path / "wall", HOST_REF, HOST_INPUTS), candidate, cfg)
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck())
    assert report.passed, report.reason
    assert "n_cpu stays on the CPU" in report.skipped["small"]["graph"]
    assert list(report.timings["small"]) == ["wall"]
    graph_task = write_task(tmp_path / "graph", HOST_REF, HOST_INPUTS, regime="graph")
    ctx = make_ctx(graph_task, candidate, cfg)
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck())
    assert not report.passed and "extract it with --regime wall" in report.reason


def test_a_data_ptr_cache_is_caught_by_the_recheck_as_drift(tmp_path):
    cache: dict[int, torch.Tensor] = {}

    def caching(x):
        if x.data_ptr() not in cache:
            cache[x.data_ptr()] = x * 2.0 + 1.0
        return cache[x.data_ptr()]

    ctx = make_ctx(write_task(tmp_path, SCALE_REF, SCALE_INPUTS), caching)
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck())
    assert not report.passed
    assert "post-timing re-check failed" in report.reason
    assert [f.kind for f in report.findings] == ["drift"]
    assert "fresh inputs" in report.findings[0].evidence


def test_drift_after_many_calls_is_caught(tmp_path):
    counter = itertools.count()

    def drifting(x):
        y = x * 2.0 + 1.0
        return y if next(counter) < 20 else y + 1.0

    ctx = make_ctx(write_task(tmp_path, SCALE_REF, SCALE_INPUTS), drifting)
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck())
    assert not report.passed and report.findings[0].kind == "drift"


ACCUMULATE_REF = """
    import torch

    def f(seq_lens, req_to_token, out):
        # Like a decode step: read the slot at the current length, then grow the length.
        if int(seq_lens.max()) >= req_to_token.shape[1]:
            raise IndexError("seq_lens walked off the request table")
        out.copy_(req_to_token[torch.arange(seq_lens.numel()), seq_lens.long()])
        seq_lens += 1
        return out
"""
ACCUMULATE_INPUTS = """
    import torch

    def make_inputs(case, seed, device):
        g = torch.Generator().manual_seed(seed)
        batch = 8
        table = torch.randint(0, 1 << 20, (batch, 6), generator=g, dtype=torch.int32)
        seq = torch.randint(0, 3, (batch,), generator=g, dtype=torch.int32)
        return (seq, table, torch.empty(batch, dtype=torch.int32)), {}
"""


def test_accumulating_mutations_are_restored_before_every_batch(tmp_path):
    root = write_task(tmp_path, ACCUMULATE_REF, ACCUMULATE_INPUTS)
    ctx = make_ctx(root, None)
    ctx.candidate = ctx.task.load_reference()  # an exact copy: must time without walking off the table
    cfg = TimingConfig(
        **{**FAST.__dict__, "min_samples": 30, "max_samples": 40, "cv_target": 0.0, "wall_calls": 5}
    )
    ctx.config = EvalConfig(timing=cfg)
    check = RecordingCheck()
    report = time_cases(ctx, list(ctx.task.cases), check_call=check)
    assert report.passed, report.reason
    assert (
        report.timings["small"]["wall"].reference.samples + report.timings["small"]["wall"].reference.outliers
        >= 30
    )
    _, before, _, after = check.calls[0]
    assert torch.equal(after[0][0], before[0][0] + 1)  # the checked call saw pristine (restored) lengths


def test_a_candidate_that_raises_fails_timing_with_its_name(tmp_path):
    counter = itertools.count()

    def flaky(x):
        if next(counter) == 10:
            raise RuntimeError("launch failed")
        return x * 2.0 + 1.0

    ctx = make_ctx(write_task(tmp_path, SCALE_REF, SCALE_INPUTS), flaky)
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck())
    assert not report.passed
    assert (
        report.reason
        == "the candidate raised during wall timing of case 'small': RuntimeError: launch failed"
    )


class SlowMemoryBackend(CpuTimingBackend):
    def hardware(self) -> Hardware:
        # 100 GB/s: a 64 Ki-float output (256 KiB) needs >= 2.6 µs; the CPU reference takes far longer.
        return Hardware(backend=self.name, device="cpu", memory_bandwidth_gbps=100.0)


ROOFLINE_INPUTS = """
    import torch

    def make_inputs(case, seed, device):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(65536, generator=g).to(device),), {}
"""


def test_a_candidate_faster_than_the_roofline_is_flagged(tmp_path):
    ctx = make_ctx(write_task(tmp_path, SCALE_REF, ROOFLINE_INPUTS), None, backend=SlowMemoryBackend())
    canned = torch.zeros(65536)
    ctx.candidate = lambda x: canned  # does no work at all
    always_ok = lambda *a: True  # the re-check is not what this test is about
    report = time_cases(ctx, [ctx.task.cases[0]], check_call=always_ok)
    assert not report.passed and report.quarantine
    assert [f.kind for f in report.findings] == ["beyond_roofline"]
    assert "bytes floor" in report.findings[0].evidence
    assert report.floors_us["small"]["wall"] == pytest.approx(65536 * 4 / 100e3)


def test_cold_cache_flushes_before_every_sample(tmp_path):
    backend = CpuTimingBackend()
    root = write_task(tmp_path, SCALE_REF, SCALE_INPUTS, extra='cache = "cold"')
    ctx = make_ctx(root, lambda x: x * 2.0 + 1.0, backend=backend)
    report = time_cases(ctx, [ctx.task.cases[0]], check_call=RecordingCheck())
    assert report.passed
    wall = report.timings["small"]["wall"]
    assert backend.flushes >= 2 * (wall.reference.samples + wall.reference.outliers)


def test_derive_seed_is_stable_and_purpose_specific():
    assert derive_seed((1, 2), 0, "reference") == derive_seed((1, 2), 0, "reference")
    assert derive_seed((1, 2), 0, "reference") != derive_seed((1, 2), 0, "candidate")
    assert derive_seed((1, 2), 0, "reference") != derive_seed((1, 3), 0, "reference")
    assert 0 <= derive_seed((5,), "x") < 2**31


class CountingSandbox:
    def __init__(self) -> None:
        self.depth = 0
        self.entered = 0

    def armed(self):
        import contextlib

        @contextlib.contextmanager
        def arm():
            self.depth += 1
            self.entered += 1
            try:
                yield
            finally:
                self.depth -= 1

        return arm()


def test_candidate_calls_run_with_the_sandbox_armed(tmp_path):
    sandbox = CountingSandbox()
    seen_depths = []

    def candidate(x):
        seen_depths.append(sandbox.depth)
        return x * 2.0 + 1.0

    ctx = make_ctx(write_task(tmp_path, SCALE_REF, SCALE_INPUTS), candidate)
    ctx.sandbox = sandbox
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck())
    assert report.passed
    assert seen_depths and min(seen_depths) >= 1
    assert sandbox.entered == 2  # once per case and regime, not once per call


def test_calls_per_replay_is_a_power_of_two_within_the_cap():
    from evaluators.timing.graph import calls_per_replay

    assert calls_per_replay(200.0, 1.3, 1000) == 128  # 154 wanted -> nearest power of two
    assert calls_per_replay(200.0, 1.4, 1000) == calls_per_replay(200.0, 1.45, 1000)  # noise-proof
    assert calls_per_replay(200.0, 250.0, 1000) == 1
    assert calls_per_replay(200.0, 0.0, 1000) == 1000
    assert calls_per_replay(200.0, 0.01, 7) == 7


DECODE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "decode_metadata"


@pytest.mark.skipif(not DECODE.is_dir(), reason="examples/tasks/decode_metadata not present")
def test_real_task_with_in_place_outputs_and_the_judges_recheck():
    pytest.importorskip("evaluators.correctness")
    ctx = make_ctx(DECODE, None)
    ctx.candidate = ctx.task.load_reference()  # an exact copy of the reference
    cases = list(ctx.task.cases)[:2]
    report = time_cases(ctx, cases)  # the default re-check: evaluators.correctness.check_call
    assert report.passed, report.reason
    assert set(report.timings) == {c.name for c in cases}
    # Three int32 buffers are written in place: the floor counts their changed elements, at least a launch.
    assert all(report.floors_us[c.name]["wall"] >= 1.0 for c in cases)

    reference = ctx.task.load_reference()

    def leaks_into_a_read_only_argument(*args, **kwargs):
        reference(*args, **kwargs)
        args[3][0, 0] += 1  # req_to_token: the reference never writes it

    ctx.candidate = leaks_into_a_read_only_argument
    report = time_cases(ctx, cases[:1])
    assert not report.passed
    assert {f.kind for f in report.findings} == {"drift", "input_mutation"}


def test_a_roofline_read_that_names_no_argument_is_a_task_error(tmp_path):
    from evaluators.errors import TaskError

    root = write_task(tmp_path, SCALE_REF, SCALE_INPUTS, extra='[roofline]\nread = ["y"]')
    ctx = make_ctx(root, lambda x: x * 2.0 + 1.0)
    with pytest.raises(TaskError, match="not an argument of the reference"):
        time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck())


def test_alternating_graphs_switch_allocations_in_blocks_and_recheck_on_the_primary():
    from evaluators.timing.graph import AlternatingGraphs

    class FakeRunner:
        def __init__(self, name: str) -> None:
            self.name, self.replays, self.calls = name, [], 4

        def measure(self, before=None) -> float:
            self.replays.append(before is not None)
            return 1.0

        def last_return(self) -> str:
            return self.name

    a, b = FakeRunner("a"), FakeRunner("b")
    graphs = AlternatingGraphs([a, b], block=3)
    for _ in range(9):
        graphs.measure()
    # a: samples 1-3 and 7-9 plus one discarded replay on switching back; b: 4-6 plus one discarded replay
    assert len(a.replays) == 7 and len(b.replays) == 4
    graphs.measure_primary(before=lambda: None)
    assert a.replays[-1] is True and graphs.last_return() == "a" and graphs.calls == 4


def test_gpu_lock_is_held_per_case_for_sampling_and_a_wall_task_stops_at_its_cap(tmp_path):
    # An interval the wall regime never gets narrow enough (wall_ci_target unreachable here): its scored
    # regime stops at wall_time_cap_s, not time_cap_s. The GPU lock is entered once per case and regime.
    cfg = TimingConfig(
        **{
            **FAST.__dict__,
            "wall_ci_target": 1e-12,
            "wall_max_samples": 10**6,
            "time_cap_s": 5.0,
            "wall_time_cap_s": 0.05,
        }
    )
    lines: list[str] = []
    ctx = make_ctx(write_task(tmp_path, SCALE_REF, SCALE_INPUTS), lambda x: x * 2.0 + 1.0, config=cfg)
    ctx = dataclasses.replace(ctx, log=lines.append)
    holds: list[str] = []

    @contextlib.contextmanager
    def hold():
        holds.append("enter")
        time.sleep(0.03)  # another worker's hold: the line must say this one waited for it
        yield True
        holds.append("exit")

    started = time.monotonic()
    report = time_cases(ctx, list(ctx.task.cases), check_call=RecordingCheck(), gpu_lock=hold)
    assert report.passed, report.reason
    assert holds == ["enter", "exit"] * 2
    assert time.monotonic() - started < 2.0
    timed = [line for line in lines if line.startswith("timed")]
    assert len(timed) == 2 and all("stopped on time cap" in line for line in timed)
    from bench.lock_timeline import HOLD

    waits = [HOLD.search(line) for line in timed]
    assert all(m is not None and m.group(3) is not None and int(m.group(3)) >= 30 for m in waits), timed


# --- calls per wall sample from the graph regime's estimates -----------------------------------------------


class FixedGraphRunner(WallRunner):
    """Stands in for a case's graph runners on the CPU: runs the calls for real (the re-check judges them) and
    reports a fixed per-call time, so the graph regime's medians are known."""

    def __init__(self, fn, inputs: InputSet, us: float) -> None:
        super().__init__(fn, inputs, lambda: None, calls=1)
        self.us = us

    def measure(self, before=None) -> float:
        super().measure(before)
        return self.us


@pytest.mark.parametrize(
    ("task_regime", "graph_runs", "wall_calls"),
    [
        # The graph regime ran first: the 500 us reference takes ceil(2000 / 500) calls, the 50 us candidate
        # would want 40 and keeps wall_calls.
        ("graph", True, (4, 10)),
        ("wall", True, (10, 10)),  # the wall regime is the task's own and runs first: no estimate yet
        ("graph", False, (10, 10)),  # the graph regime was skipped (a CPU device): no estimate
    ],
)
def test_wall_samples_are_sized_by_the_graph_regimes_medians(
    tmp_path, monkeypatch, task_regime: str, graph_runs: bool, wall_calls: tuple[int, int]
):
    if graph_runs:

        def graph_runners(self, ref_set, cand_set):
            return (
                FixedGraphRunner(self.ctx.reference, ref_set, 500.0),
                FixedGraphRunner(self.ctx.candidate, cand_set, 50.0),
            )

        monkeypatch.setattr(CaseTimer, "_graph_runners", graph_runners)
    built: list[tuple[str, int]] = []

    class RecordingWallRunner(WallRunner):
        def __init__(self, fn, inputs, sync, calls, flush_l2=None, feed=None) -> None:
            super().__init__(fn, inputs, sync, calls, flush_l2, feed)
            built.append(("reference" if fn is ctx.reference else "candidate", self.calls))

    monkeypatch.setattr("evaluators.timing.stage.WallRunner", RecordingWallRunner)
    cfg = TimingConfig(**{**FAST.__dict__, "wall_calls": 10, "regimes": ("graph", "wall")})
    root = write_task(tmp_path, SCALE_REF, SCALE_INPUTS, regime=task_regime)
    lines: list[str] = []
    ctx = make_ctx(root, lambda x: x * 2.0 + 1.0, config=cfg)
    ctx = dataclasses.replace(ctx, log=lines.append)
    report = time_cases(ctx, [ctx.task.cases[0]], check_call=RecordingCheck())
    assert report.passed, report.reason
    assert built == [("reference", wall_calls[0]), ("candidate", wall_calls[1])]
    if graph_runs:
        graph = report.timings["small"]["graph"]
        assert (graph.reference.median_us, graph.candidate.median_us) == (500.0, 50.0)
    wall_line = next(line for line in lines if line.startswith("timed small [wall]"))
    assert f"({wall_calls[0]}/{wall_calls[1]} calls per sample)" in wall_line
