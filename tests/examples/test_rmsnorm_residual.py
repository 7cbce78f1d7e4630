"""rmsnorm_residual: the fused Triton add + RMSNorm matches the reference in bf16, fp16 and fp32."""

from __future__ import annotations

import pytest
import torch

TASK = "rmsnorm_residual"

# Launch branches: one row, an odd width (masked tail), a width past the fused limit (chunked two-pass path,
# with a tail chunk), a 3-D input, and each dtype.
BRANCH_SHAPES = [
    pytest.param({"tokens": 1, "hidden": 1023}, id="t1_h1023"),
    pytest.param({"tokens": 5, "hidden": 2048}, id="t5_h2048"),
    pytest.param({"tokens": 2, "hidden": 10000}, id="t2_h10000_chunked"),
    # Past the candidate's small-batch threshold: several rows per program, an odd row count (masked tail).
    pytest.param({"tokens": 67, "hidden": 320}, id="t67_h320_many_rows"),
]
DTYPES = ["bfloat16", "float16", "float32"]


def test_candidate_matches_reference_on_task_cases(harness, candidate, small_case, device):
    params = dict(harness.task.case(small_case).params)
    for seed in (0, 1):
        args, kwargs = harness.inputs(params, seed, device)
        verdict = harness.check(candidate, args, kwargs)
        assert verdict.ok, verdict.reason


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", BRANCH_SHAPES)
def test_candidate_matches_reference_on_branch_shapes(harness, candidate, shape, dtype, device):
    args, kwargs = harness.inputs({**shape, "dtype": dtype, "eps": 1e-6}, seed=11, device=device)
    verdict = harness.check(candidate, args, kwargs)
    assert verdict.ok, verdict.reason


def test_three_dimensional_input(harness, candidate, device):
    (x, residual, weight), kwargs = harness.inputs(
        {"tokens": 6, "hidden": 512, "dtype": "bfloat16"}, 2, device
    )
    args = (x.view(2, 3, 512), residual.view(2, 3, 512), weight)
    verdict = harness.check(candidate, args, kwargs)
    assert verdict.ok, verdict.reason


def test_row_strided_input(harness, candidate, device):
    """A view into a wider buffer (rows not contiguous with each other) is read through its strides."""
    (x, residual, weight), kwargs = harness.inputs(
        {"tokens": 4, "hidden": 1536, "dtype": "float32"}, 3, device
    )
    wide = torch.zeros(4, 2048, dtype=x.dtype, device=device)
    wide[:, :1536] = x
    verdict = harness.check(candidate, (wide[:, :1536], residual, weight), kwargs)
    assert verdict.ok, verdict.reason


def test_a_norm_without_the_residual_add_is_caught(harness, device):
    def forgets_residual(x, residual, weight, eps):
        h = x.float()
        out = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * weight).to(x.dtype)
        return out, (x.float() + residual.float()).to(x.dtype)

    args, kwargs = harness.inputs({"tokens": 4, "hidden": 4096, "dtype": "bfloat16"}, 0, device)
    verdict = harness.check(forgets_residual, args, kwargs)
    assert not verdict.ok and verdict.mismatch.output == "return[0]"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hidden", [4096, 5000], ids=["one_slice", "sliced_tail"])
def test_constexpr_seed_many_row_kernel(harness, dtype, hidden, device, monkeypatch):
    """The constexpr seed's two-pass kernel starts at thousands of rows; with its threshold lowered the
    interpreter reaches it on 40 rows (4096 columns: one slice; 5000: a full slice and a masked tail)."""
    from tests.examples.conftest import TASKS_DIR, import_file

    module = import_file(TASKS_DIR / TASK / "candidates" / "rmsnorm_residual_constexpr_hidden_triton.py")
    monkeypatch.setattr(module, "TWO_PASS_MIN_ROWS", 32)
    args, kwargs = harness.inputs({"tokens": 40, "hidden": hidden, "dtype": dtype, "eps": 1e-6}, 5, device)
    verdict = harness.check(getattr(module, harness.task.entry), args, kwargs)
    assert verdict.ok, verdict.reason
