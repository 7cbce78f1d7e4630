"""evaluators.timing on a CUDA GPU: graph capture and replay, the capture-failure rules, the re-check in
the graph regime and the roofline on a candidate that does no work. Skipped on machines without a GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl

from evaluators.config import EvalConfig, TimingConfig
from evaluators.context import JudgeContext
from evaluators.task import load_task
from evaluators.timing import time_cases

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

CFG = TimingConfig(warmup_ms=5.0, min_samples=10, max_samples=60, time_cap_s=0.5, replay_target_us=100.0)

REFERENCE = """
import torch

def scale(x):
    return x * 2.0 + 1.0
"""
INPUTS = """
import torch

def make_inputs(case, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(case["n"], device=device, generator=g),), {}
"""


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2.0 + 1.0, mask=mask)


def triton_scale(x):
    y = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y


def make_ctx(tmp_path, candidate, regime="graph", config=CFG):
    (tmp_path / "task.toml").write_text(
        f'name = "scale"\nentry = "scale"\nregime = "{regime}"\n'
        '[[cases]]\nname = "tiny"\nn = 4096\n[[cases]]\nname = "big"\nn = 16777216\n'
    )
    (tmp_path / "reference.py").write_text(REFERENCE)
    (tmp_path / "inputs.py").write_text(INPUTS)
    task = load_task(tmp_path)
    from evaluators.backends.triton_cuda import TritonCudaBackend

    backend = TritonCudaBackend(0)
    backend.init_device()
    return JudgeContext(
        task=task,
        backend=backend,
        config=EvalConfig(timing=config),
        seeds=(101, 202),
        reference=task.load_reference(),
        candidate=candidate,
        candidate_module=SimpleNamespace(),
        candidate_path=tmp_path / "candidate.py",
        candidate_source="",
        log=lambda line: None,
    )


def check(ctx, case, before, returned, after):
    expected = ctx.reference(*before[0], **before[1])
    ok = isinstance(returned, torch.Tensor) and torch.allclose(returned, expected)
    return SimpleNamespace(ok=ok, reason="" if ok else "wrong values")


def test_a_triton_candidate_is_timed_in_both_regimes(tmp_path):
    ctx = make_ctx(tmp_path, triton_scale)
    report = time_cases(ctx, list(ctx.task.cases), check_call=check)
    assert report.passed, report.reason
    for case in ("tiny", "big"):
        graph, wall = report.timings[case]["graph"], report.timings[case]["wall"]
        assert graph.candidate.median_us > 0 and wall.candidate.median_us >= graph.candidate.median_us * 0.5
        assert graph.ci_low <= graph.speedup <= graph.ci_high
    # The fused kernel does one pass where the reference does two.
    assert report.timings["big"]["graph"].speedup > 1.2
    assert not report.findings


def test_a_candidate_that_syncs_cannot_run_in_a_graph_task(tmp_path):
    def syncing(x):
        torch.cuda.synchronize()
        return triton_scale(x)

    ctx = make_ctx(tmp_path, syncing)
    report = time_cases(ctx, list(ctx.task.cases), check_call=check)
    assert not report.passed and "cannot be captured in a CUDA graph" in report.reason
    wall_ctx = make_ctx(tmp_path, syncing, regime="wall")
    report = time_cases(wall_ctx, list(wall_ctx.task.cases), check_call=check)
    assert report.passed
    assert "cannot be captured" in report.skipped["tiny"]["graph"]
    assert "wall" in report.timings["tiny"]


def test_a_data_ptr_cache_baked_into_the_graph_is_caught(tmp_path):
    cache = {}

    def caching(x):
        if x.data_ptr() not in cache:
            cache[x.data_ptr()] = triton_scale(x)
        return cache[x.data_ptr()]

    ctx = make_ctx(tmp_path, caching)
    report = time_cases(ctx, list(ctx.task.cases), check_call=check)
    assert not report.passed
    assert [f.kind for f in report.findings] in (["drift"], ["beyond_roofline"])


def test_a_candidate_doing_no_work_is_beyond_the_roofline(tmp_path):
    canned = {}

    def lazy(x):
        # Only the first call allocates and fills: later calls (and the captured graph) do no work at all.
        if x.numel() not in canned:
            canned[x.numel()] = torch.zeros_like(x)
        return canned[x.numel()]

    ctx = make_ctx(tmp_path, lazy)
    report = time_cases(ctx, [ctx.task.cases[1]], check_call=lambda *a: True)
    assert not report.passed and report.quarantine
    assert report.findings[0].kind == "beyond_roofline"


def test_the_wall_regime_feeds_the_gpu_unless_the_code_synchronises(tmp_path):
    import dataclasses

    def syncing(x):
        out = triton_scale(x)
        torch.cuda.synchronize()  # like a .item(): the host waits for the GPU on every call
        return out

    for candidate, modes in ((triton_scale, "fed/fed"), (syncing, "fed/sync")):
        lines: list[str] = []
        ctx = dataclasses.replace(make_ctx(tmp_path, candidate, regime="wall"), log=lines.append)
        report = time_cases(ctx, list(ctx.task.cases), check_call=check)
        assert report.passed, report.reason
        walls = [line for line in lines if line.startswith("timed") and "[wall]" in line]
        assert walls and all(f"{modes} samples" in line for line in walls), walls
        for case in ("tiny", "big"):
            wall = report.timings[case]["wall"]
            assert wall.ci_low <= wall.speedup <= wall.ci_high
            assert wall.claim_low is not None and wall.claim_low < wall.ci_low
