"""silu_and_mul: the Triton SwiGLU activation matches the reference in bf16, fp16 and fp32."""

from __future__ import annotations

import pytest
import torch

TASK = "silu_and_mul"

# Launch branches: a width below one block with a masked tail, several column blocks with a tail, one row.
BRANCH_SHAPES = [
    pytest.param({"tokens": 3, "d": 1000}, id="t3_d1000"),
    pytest.param({"tokens": 2, "d": 4500}, id="t2_d4500_three_blocks"),
    pytest.param({"tokens": 1, "d": 64}, id="t1_d64"),
    # Past the candidates' small-batch thresholds (rows, output elements): the prefill-sized launches.
    pytest.param({"tokens": 97, "d": 200}, id="t97_d200_many_rows"),
    pytest.param({"tokens": 70, "d": 1000}, id="t70_d1000_medium_numel"),
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
    args, kwargs = harness.inputs({**shape, "dtype": dtype}, seed=5, device=device)
    verdict = harness.check(candidate, args, kwargs)
    assert verdict.ok, verdict.reason


def test_three_dimensional_input(harness, candidate, device):
    (x,), kwargs = harness.inputs({"tokens": 6, "d": 384, "dtype": "bfloat16"}, 1, device)
    verdict = harness.check(candidate, (x.view(2, 3, 768),), kwargs)
    assert verdict.ok, verdict.reason


# The interpreter's numpy exp warns on exp(100); the GPU does not.
@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")
def test_extreme_gates_follow_both_tails_of_silu(harness, candidate, device):
    gate = torch.tensor([[-100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 80.0, 3.0]], device=device)
    x = torch.cat([gate, torch.full_like(gate, 0.5)], dim=-1)
    verdict = harness.check(candidate, (x,), {})
    assert verdict.ok, verdict.reason
    assert torch.isfinite(candidate(x)).all()


def test_swapped_halves_are_caught(harness, device):
    def swapped(x):
        d = x.shape[-1] // 2
        return torch.nn.functional.silu(x[..., d:]) * x[..., :d]

    args, kwargs = harness.inputs({"tokens": 2, "d": 256, "dtype": "float32"}, 0, device)
    assert not harness.check(swapped, args, kwargs).ok
