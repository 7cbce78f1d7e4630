"""The mini inference repo: its own test suite and benchmark run for real, and its functions agree with the
references of the example tasks (the same semantics in their natural habitat)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch


@pytest.fixture(scope="module")
def minisglang(minirepo_dir):
    sys.path.insert(0, str(minirepo_dir))
    try:
        import minisglang

        yield minisglang
    finally:
        sys.path.remove(str(minirepo_dir))


def run_in_minirepo(minirepo_dir, *argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, *argv], cwd=minirepo_dir, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_minirepo_test_suite_passes(minirepo_dir):
    """Its own pytest run, as kernelbot runs it before and after inserting a kernel (the suite includes a
    run of benchmarks/throughput.py)."""
    proc = run_in_minirepo(minirepo_dir, "-m", "pytest", "-p", "no:cacheprovider")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = re.search(r"(\d+) passed", proc.stdout)
    assert summary and int(summary.group(1)) >= 12, proc.stdout[-2000:]
    assert "failed" not in proc.stdout and "error" not in proc.stdout


@pytest.mark.parametrize("case", ["t1_d2048_bf16", "t16_d1792_fp32"])
def test_silu_and_mul_matches_the_task_reference(minisglang, load_harness, case):
    from minisglang.layers.activation import SiluAndMul

    harness = load_harness("silu_and_mul")
    args, kwargs = harness.inputs(dict(harness.task.case(case).params), seed=0, device="cpu")
    verdict = harness.check(lambda x: SiluAndMul().forward_native(x), args, kwargs)
    assert verdict.ok, verdict.reason


@pytest.mark.parametrize("case", ["t1_h4096_bf16", "t8_h7168_fp32"])
def test_rmsnorm_matches_the_task_reference(minisglang, load_harness, case):
    from minisglang.layers.layernorm import RMSNorm

    harness = load_harness("rmsnorm_residual")
    (x, residual, weight), kwargs = harness.inputs(dict(harness.task.case(case).params), seed=1, device="cpu")
    norm = RMSNorm(x.shape[-1], eps=kwargs["eps"]).to(weight.dtype)
    with torch.no_grad():
        norm.weight.copy_(weight)
    verdict = harness.check(lambda x, r, w, eps: norm.forward_native(x, r), (x, residual, weight), kwargs)
    assert verdict.ok, verdict.reason


@pytest.mark.parametrize("case", ["tokens1", "tokens128"])
def test_grouped_topk_matches_the_task_reference(minisglang, load_harness, case):
    from minisglang.layers.moe import topk

    harness = load_harness("moe_grouped_topk")
    args, kwargs = harness.inputs(dict(harness.task.case(case).params), seed=2, device="cpu")
    assert kwargs == {
        "topk": topk.TOP_K,
        "num_expert_group": topk.NUM_EXPERT_GROUP,
        "topk_group": topk.TOPK_GROUP,
        "routed_scaling_factor": topk.ROUTED_SCALING_FACTOR,
    }
    verdict = harness.check(topk.biased_grouped_topk, args, kwargs)
    assert verdict.ok, verdict.reason


@pytest.mark.parametrize("case", ["bs8_ctx4k_page16", "bs8_ctx8k_page64_draft2", "bs1_ctx4k_page1"])
def test_backend_metadata_update_matches_the_task_reference(minisglang, load_harness, case):
    from minisglang.attention.flash_backend import FlashDecodeBackend

    harness = load_harness("decode_metadata")
    args, _ = harness.inputs(dict(harness.task.case(case).params), seed=3, device="cpu")
    cache, cu, table, req_to_token, rows, strided, max_pages, seq_lens, delta, page = args
    expected = [a.clone() for a in (cache, cu, table)]
    harness.reference(*expected[:3], req_to_token, rows, strided, max_pages, seq_lens, delta, page)

    bs = seq_lens.shape[0]
    backend = FlashDecodeBackend(req_to_token, page, max_bs=bs)
    buffers = (backend.cache_seqlens, backend.cu_seqlens_k, backend.page_table)
    for buffer, start in zip(buffers, args[:3], strict=True):
        buffer.copy_(start)  # the same garbage the task starts from
    backend.init_forward_metadata_replay(bs, rows, seq_lens, seq_lens.cpu(), seq_len_delta=delta)
    got = {
        "cache_seqlens": backend.cache_seqlens,
        "cu_seqlens_k": backend.cu_seqlens_k,
        "page_table": backend.page_table,
    }
    want = dict(zip(got, expected, strict=True))
    verdict = harness.compare(want, got)
    assert verdict.ok, verdict.reason
    assert -(-backend.max_seq_len_k // page) == max_pages
