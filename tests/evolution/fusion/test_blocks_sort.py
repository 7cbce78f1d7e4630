"""The row sort and packed keys against torch: a full descending sort of every row that carries the indices
(stable on ties), a row of one key included (which tl.sort before Triton 3.9 cannot sort)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from evolution.writers.fusion.blocks.keys import _kb_key_index, _kb_key_value, _kb_pack
from evolution.writers.fusion.blocks.sort import _kb_sort_rows

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def _sort_kernel(x_ptr, values_ptr, index_ptr, N: tl.constexpr, NP: tl.constexpr, R: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    lanes = tl.arange(0, NP)[None, :]
    valid = lanes < N
    x = tl.load(x_ptr + rows * N + lanes, mask=valid, other=0.0)
    keys = tl.where(valid, _kb_pack(x, lanes), -9223372036854775807)
    ordered = _kb_sort_rows(keys)
    tl.store(values_ptr + rows * N + lanes, _kb_key_value(ordered), mask=valid)
    tl.store(index_ptr + rows * N + lanes, _kb_key_index(ordered), mask=valid)


@pytest.mark.parametrize(("rows", "n"), [(1, 16), (2, 128), (4, 50), (1, 1), (2, 1), (2, 2)])
def test_sort_rows_matches_a_stable_descending_sort(rows: int, n: int) -> None:
    x = torch.randn(rows, n, generator=torch.Generator().manual_seed(n)).to(DEVICE)
    if n > 4:
        x[:, 3] = x[:, 1]  # a tie: the smaller index first
    values = torch.empty_like(x)
    index = torch.empty(rows, n, dtype=torch.int32, device=DEVICE)
    _sort_kernel[(1,)](x, values, index, n, triton.next_power_of_2(n), rows)
    expected = torch.sort(x, dim=1, descending=True, stable=True)
    assert torch.equal(values, expected.values)
    assert torch.equal(index.long(), expected.indices)
