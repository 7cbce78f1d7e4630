"""Prefix sums (inclusive, exclusive, carried across the chunks of a longer row) and the in-register gathers,
against torch.cumsum and indexing: masked tails, one row and several, int32 and float32."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from evolution.writers.fusion.blocks.gather import _kb_pick, _kb_take_rows
from evolution.writers.fusion.blocks.scan import _kb_prefix_sum, _kb_prefix_sum_carry

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def _scan_kernel(x_ptr, out_ptr, N: tl.constexpr, NP: tl.constexpr, R: tl.constexpr, EXCLUSIVE: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    lanes = tl.arange(0, NP)[None, :]
    valid = lanes < N
    x = tl.load(x_ptr + rows * N + lanes, mask=valid, other=0)
    tl.store(out_ptr + rows * N + lanes, _kb_prefix_sum(x, 1, EXCLUSIVE), mask=valid)


@triton.jit
def _chunked_scan_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    carry = tl.zeros([1], tl.int32)
    for start in range(0, n, BLOCK):
        lanes = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + lanes, mask=lanes < n, other=0)
        sums, carry = _kb_prefix_sum_carry(x, carry, 0)
        tl.store(out_ptr + lanes, sums, mask=lanes < n)


@triton.jit
def _take_kernel(src_ptr, index_ptr, out_ptr, picked_ptr, N: tl.constexpr, M: tl.constexpr, R: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    src = tl.load(src_ptr + rows * N + tl.arange(0, N)[None, :])
    index = tl.load(index_ptr + rows * M + tl.arange(0, M)[None, :])
    tl.store(out_ptr + rows * M + tl.arange(0, M)[None, :], _kb_take_rows(src, index))
    first = tl.sum(tl.where(tl.arange(0, M)[None, :] == 0, index, 0), axis=1)[:, None]
    tl.store(picked_ptr + tl.arange(0, R), _kb_pick(src, tl.arange(0, N)[None, :], first, 1))


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize(
    ("rows", "n", "dtype"), [(1, 8, torch.int32), (4, 37, torch.int32), (2, 5, torch.float32)]
)
def test_prefix_sum(rows: int, n: int, dtype: torch.dtype, exclusive: bool) -> None:
    x = torch.randint(-5, 20, (rows, n), generator=torch.Generator().manual_seed(n)).to(dtype).to(DEVICE)
    out = torch.empty_like(x)
    _scan_kernel[(1,)](x, out, n, triton.next_power_of_2(n), rows, exclusive)
    expected = torch.cumsum(x, dim=1).to(dtype)
    if exclusive:
        expected = expected - x
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize(("n", "block"), [(1, 4), (10, 4), (64, 16), (1000, 128)])
def test_prefix_sum_carried_over_chunks(n: int, block: int) -> None:
    x = torch.randint(0, 9, (n,), dtype=torch.int32, generator=torch.Generator().manual_seed(n)).to(DEVICE)
    out = torch.empty_like(x)
    _chunked_scan_kernel[(1,)](x, out, n, block)
    assert torch.equal(out, torch.cumsum(x, 0).to(torch.int32))


@pytest.mark.parametrize(("rows", "n", "m"), [(1, 16, 4), (4, 8, 8), (2, 32, 1)])
def test_take_rows_and_pick(rows: int, n: int, m: int) -> None:
    gen = torch.Generator().manual_seed(n + m)
    src = torch.randn(rows, n, generator=gen).to(DEVICE)
    index = torch.randint(0, n, (rows, m), generator=gen, dtype=torch.int32).to(DEVICE)
    out = torch.empty(rows, m, device=DEVICE)
    picked = torch.empty(rows, device=DEVICE)
    _take_kernel[(1,)](src, index, out, picked, n, m, rows)
    assert torch.equal(out, torch.gather(src, 1, index.long()))
    assert torch.equal(picked, src[torch.arange(rows), index[:, 0].long()])
