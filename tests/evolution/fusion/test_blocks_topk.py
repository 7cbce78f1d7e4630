"""The top-k building blocks against torch.topk, run as real kernels (the interpreter on CPU): rows in
registers with a masked tail, non-power-of-two widths, one row and several, K of 1, K equal to the width, and
rows holding -inf (a masked-out expert) and exact ties (torch orders equal values by index)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from evolution.writers.fusion.blocks.topk import (
    _kb_topk_rows,
    _kb_topk_rows_bitonic,
    _kb_topk_rows_threshold,
    _kb_topk_rows_twopass,
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
METHODS = {"mask": 0, "threshold": 1, "twopass": 2, "bitonic": 3}


@triton.jit
def _topk_kernel(
    x_ptr, values_ptr, index_ptr, N: tl.constexpr, NP: tl.constexpr, R: tl.constexpr,
    K: tl.constexpr, KP: tl.constexpr, METHOD: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * R + tl.arange(0, R)[:, None]
    lanes = tl.arange(0, NP)[None, :]
    valid = lanes < N
    x = tl.load(x_ptr + rows * N + lanes, mask=valid, other=0.0)
    if METHOD == 0:
        values, index = _kb_topk_rows(x, valid, K, KP)
    elif METHOD == 1:
        values, index = _kb_topk_rows_threshold(x, valid, K, KP)
    elif METHOD == 2:
        values, index = _kb_topk_rows_twopass(x, valid, K, KP)
    else:
        values, index = _kb_topk_rows_bitonic(x, valid, K, KP)
    slots = tl.arange(0, KP)[None, :]
    tl.store(values_ptr + rows * K + slots, values, mask=slots < K)
    tl.store(index_ptr + rows * K + slots, index, mask=slots < K)


def run_topk(
    x: torch.Tensor, k: int, method: str, rows_per_program: int
) -> tuple[torch.Tensor, torch.Tensor]:
    rows, n = x.shape
    values = torch.empty(rows, k, device=x.device)
    index = torch.empty(rows, k, dtype=torch.int32, device=x.device)
    grid = (rows // rows_per_program,)
    np2, kp = triton.next_power_of_2(n), triton.next_power_of_2(k)
    _topk_kernel[grid](x, values, index, n, np2, rows_per_program, k, kp, METHODS[method])
    return values, index


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize(
    ("rows", "n", "k", "per_program"),
    [
        (1, 256, 8, 1),  # one row: DeepSeek-V3's 256 experts, top-8
        (4, 64, 8, 2),  # several rows per program
        (4, 37, 5, 2),  # a non-power-of-two width: masked tail, K not a power of two
        (2, 100, 1, 2),  # K = 1
        (2, 100, 1, 1),  # K = 1 at one row a program: tl.topk before Triton 3.9 cannot take it
        (2, 8, 8, 1),  # K = the width: every lane taken
        (2, 24, 3, 2),  # a group of 24 experts
    ],
)
def test_topk_matches_torch(method: str, rows: int, n: int, k: int, per_program: int) -> None:
    x = torch.randn(rows, n, generator=torch.Generator().manual_seed(n * 31 + k)).to(DEVICE)
    values, index = run_topk(x, k, method, per_program)
    expected = torch.topk(x, k, dim=1)
    torch.testing.assert_close(values, expected.values, atol=0, rtol=0)
    assert torch.equal(index.long(), expected.indices)


@pytest.mark.parametrize("method", list(METHODS))
def test_topk_with_minus_infinity_and_ties(method: str) -> None:
    """Masked-out entries (-inf) are never chosen before finite ones; equal values go by index."""
    x = torch.tensor(
        [
            [float("-inf"), 0.5, float("-inf"), 0.5, 0.25, float("-inf"), 0.5, -1.0],
            [3.0, 3.0, 3.0, 3.0, 1.0, 2.0, 2.0, 0.0],
        ],
        device=DEVICE,
    )
    values, index = run_topk(x, 5, method, 1)
    assert index.tolist() == [[1, 3, 6, 4, 7], [0, 1, 2, 3, 5]]
    assert values.tolist() == [[0.5, 0.5, 0.5, 0.25, -1.0], [3.0, 3.0, 3.0, 3.0, 2.0]]


@pytest.mark.parametrize("method", list(METHODS))
def test_topk_of_negative_values_orders_by_magnitude(method: str) -> None:
    """The packed keys flip negative floats so that -0.1 ranks above -2 (and 0.0 above both)."""
    x = torch.tensor([[-2.0, -0.1, -7.5, 0.0, -0.1001, -3e-8, -1e30, 1e-30]], device=DEVICE)
    values, index = run_topk(x, 8, method, 1)
    expected = torch.topk(x, 8, dim=1)
    assert torch.equal(index.long(), expected.indices)
    torch.testing.assert_close(values, expected.values, atol=0, rtol=0)
