"""Static checks: each rule on a small snippet (with the line as evidence), honest code left alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evaluators.static.checks import check_static
from evaluators.task import load_task

ROOT = Path(__file__).parents[2]
SCALE_ADD = load_task(
    ROOT / "tests" / "adversarial" / "tasks" / "scale_add"
)  # float32, dynamic n in {1000, 3000}
MATMUL = load_task(ROOT / "tests" / "adversarial" / "tasks" / "matmul_fp32")
SILU = load_task(ROOT / "examples" / "tasks" / "silu_and_mul")  # bf16 and fp32 cases, source repo sglang

KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""
LAUNCH = """
def scale_add(x, y, alpha):
    out = torch.empty_like(x)
    n = x.numel()
    _k[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    return out
"""


def scan(body: str, task=SCALE_ADD, prelude: str = KERNEL):
    return check_static(prelude + textwrap.dedent(body), task)


def classes(report) -> set[int]:
    return {f.number for f in report.findings}


def test_an_honest_candidate_is_clean() -> None:
    report = scan(LAUNCH)
    assert report.findings == [] and report.errors == []


@pytest.mark.parametrize("task", ["decode_metadata", "moe_grouped_topk", "rmsnorm_residual", "silu_and_mul"])
def test_the_example_candidates_are_clean(task: str) -> None:
    loaded = load_task(ROOT / "examples" / "tasks" / task)
    for path in (loaded.root / "candidates").glob("*.py"):
        report = check_static(path.read_text(), loaded)
        assert report.findings == [] and report.errors == [], (path, report)


def test_no_kernel_is_a_contract_error_and_bad_syntax_is_reported() -> None:
    report = check_static("import torch\ndef scale_add(x, y, alpha):\n    return x\n", SCALE_ADD)
    assert any("no @triton.jit kernel" in e for e in report.errors)
    assert "does not parse" in check_static("def scale_add(:\n", SCALE_ADD).errors[0]


@pytest.mark.parametrize(
    ("body", "klass", "fragment"),
    [
        # 11: PyTorch compute, under any alias, and the ways around a kernel
        ("import torch.nn.functional as F\ndef scale_add(x, y, alpha):\n    return F.silu(x)\n", 11, "silu"),
        (
            "from torch import add as plus\ndef scale_add(x, y, alpha):\n    return plus(x, y)\n",
            11,
            "torch.add",
        ),
        ("def scale_add(x, y, alpha):\n    return x.mul(alpha)\n", 11, ".mul()"),
        ("def scale_add(x, y, alpha):\n    return x @ y\n", 11, "@"),
        ("f = torch.compile(lambda x: x)\n" + LAUNCH, 11, "torch.compile"),
        (
            "def scale_add(x, y, alpha):\n    try:\n        return _run(x)\n"
            "    except Exception:\n        return x\n",
            11,
            "try/except",
        ),
        ("from reference import scale_add as ref\n" + LAUNCH, 11, "reference"),
        ("import sglang.srt.layers.activation\n" + LAUNCH, 11, "original implementation"),
        # 3: streams; 4: threads
        ("s = torch.cuda.Stream()\n" + LAUNCH, 3, "stream"),
        ("import threading\n" + LAUNCH, 4, "threading"),
        ("from concurrent.futures import ThreadPoolExecutor\n" + LAUNCH, 4, "concurrent"),
        # 6: monkey-patching and timers
        ("torch.cuda.synchronize = lambda *a: None\n" + LAUNCH, 6, "monkey-patching"),
        ("import time\n" + LAUNCH, 6, "timer"),
        ("setattr(torch, 'allclose', lambda *a, **k: True)\n" + LAUNCH, 6, "setattr"),
        # 7 / 8: state across calls
        (
            "_cache = {}\ndef scale_add(x, y, alpha):\n    _cache[x.data_ptr()] = x\n    return x\n",
            7,
            "_cache",
        ),
        (
            "_n = 0\ndef scale_add(x, y, alpha):\n    global _n\n    _n += 1\n    return x\n",
            8,
            "counts its calls",
        ),
        ("import functools\n@functools.lru_cache\ndef helper(n):\n    return n\n" + LAUNCH, 7, "cache"),
        # 9 / 10: L2 and precision
        ("import cuda.bindings.runtime as rt\n" + LAUNCH, 9, "driver"),
        ("# cudaStreamSetAttribute accessPolicyWindow\n" + LAUNCH, 9, "access-policy"),
        ("torch.backends.cuda.matmul.allow_tf32 = True\n" + LAUNCH, 10, "precision"),
        ("def scale_add(x, y, alpha):\n    return x.half()\n", 10, ".half()"),
        # 13: a literal equal to a listed dynamic size
        (
            "def scale_add(x, y, alpha):\n    if x.numel() == 3000:\n        return x\n    return y\n",
            13,
            "3000",
        ),
        ("def scale_add(x, y, alpha):\n    _k[(1000,)](x, y, x, 1, alpha, BLOCK=1)\n", 13, "grid"),
        ("TABLE = {1000: 1, 3000: 3}\n" + LAUNCH, 13, "table"),
        # 16: files, processes, environment, the evaluator
        ("import os\n" + LAUNCH, 16, "os"),
        ("def scale_add(x, y, alpha):\n    open('/tmp/x', 'w')\n    return x\n", 16, "file I/O"),
        ("import subprocess\n" + LAUNCH, 16, "subprocess"),
        ("from evaluators import compare\n" + LAUNCH, 16, "evaluator"),
        ("def scale_add(x, y, alpha):\n    return eval('x')\n", 16, "dynamic code"),
    ],
)
def test_each_rule_flags_with_line_evidence(body: str, klass: int, fragment: str) -> None:
    report = scan(body, SILU if "sglang" in body else SCALE_ADD)
    assert klass in classes(report), report.findings
    hit = next(f for f in report.findings if f.number == klass)
    assert hit.detector == "static" and hit.evidence.startswith("line ")
    assert fragment.lower() in hit.evidence.lower(), hit.evidence


def test_precision_rules_depend_on_the_task_dtype() -> None:
    tf32_dot = """
    @triton.jit
    def _mm(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
        b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
        tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b{kw}))
    def matmul(a, b):
        c = torch.empty_like(a)
        _mm[(1,)](a, b, c, BLOCK=16)
        return c
    """
    assert 10 in classes(scan(tf32_dot.format(kw=', input_precision="tf32"'), MATMUL))
    assert 10 in classes(scan(tf32_dot.format(kw=""), MATMUL))  # fp32 default is TF32
    assert classes(scan(tf32_dot.format(kw=', input_precision="ieee"'), MATMUL)) == set()
    cast = """
    @triton.jit
    def _c(x_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        tl.store(x_ptr + r, tl.load(x_ptr + r).to(tl.bfloat16).to(tl.float32))
    def matmul(a, b):
        _c[(1,)](a, BLOCK=16)
        return a
    """
    assert 10 in classes(scan(cast, MATMUL))
    assert 10 not in classes(scan(cast.replace("def matmul(a, b)", "def silu_and_mul(a, b)"), SILU))


def test_legitimate_host_code_is_not_flagged() -> None:
    body = """
    import math
    from typing import Optional
    try:
        from triton.language.extra import libdevice
    except ImportError:
        libdevice = None
    CONFIGS = [(64, 4), (128, 8)]

    def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float, out: Optional[torch.Tensor] = None):
        out = torch.empty(x.shape, dtype=torch.float32, device=x.device) if out is None else out
        x2 = x.view(-1).contiguous()
        n = x2.numel()
        block = 1024 if n >= 1024 else triton.next_power_of_2(n)
        if n <= 3000:
            block = min(block, 4096)
        props = torch.cuda.get_device_properties(x.device) if x.is_cuda else None
        _k[(triton.cdiv(n, block),)](x2, y, out, n, alpha, BLOCK=block, num_warps=4)
        return out
    """
    report = scan(body)
    assert report.findings == [], report.findings
