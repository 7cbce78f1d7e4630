"""The bitonic networks and packed keys against torch: a full descending sort of every row that carries the
indices (stable on ties), the alternating chunk sorts and the merge of bitonic chunks the top-k builds on."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from evolution.writers.fusion.blocks.keys import _kb_key_index, _kb_key_value, _kb_pack
from evolution.writers.fusion.blocks.sort import _kb_bitonic_merge, _kb_bitonic_sort_chunks, _kb_sort_rows

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


@triton.jit
def _chunks_kernel(x_ptr, out_ptr, L: tl.constexpr, CHUNK: tl.constexpr, MERGE: tl.constexpr):
    lanes = tl.arange(0, L)[None, :]
    keys = tl.load(x_ptr + lanes)
    if MERGE:  # noqa: SIM108 - a statement-level constexpr branch, the form every Triton accepts
        keys = _kb_bitonic_merge(keys, CHUNK)
    else:
        keys = _kb_bitonic_sort_chunks(keys, CHUNK)
    tl.store(out_ptr + lanes, keys)


@pytest.mark.parametrize(("rows", "n"), [(1, 16), (2, 128), (4, 50), (1, 1), (2, 2)])
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


@pytest.mark.parametrize(("length", "chunk"), [(32, 4), (64, 8), (16, 16), (8, 2)])
def test_chunk_sorts_alternate_direction(length: int, chunk: int) -> None:
    keys = torch.randperm(length, generator=torch.Generator().manual_seed(chunk)).to(torch.int64).to(DEVICE)
    out = torch.empty_like(keys)
    _chunks_kernel[(1,)](keys, out, length, chunk, False)
    for c, piece in enumerate(out.view(-1, chunk).tolist()):
        assert piece == sorted(keys.view(-1, chunk)[c].tolist(), reverse=(c % 2 == 0))


@pytest.mark.parametrize(("length", "chunk"), [(32, 8), (16, 4), (8, 8)])
def test_merge_orders_bitonic_chunks(length: int, chunk: int) -> None:
    """Each chunk rises then falls (a bitonic sequence); the merge leaves even chunks descending, odd ones
    ascending."""
    gen = torch.Generator().manual_seed(length + chunk)
    pieces = []
    for _ in range(length // chunk):
        values = torch.randperm(1000, generator=gen)[:chunk].tolist()
        rise = sorted(values[: chunk // 2])
        fall = sorted(values[chunk // 2 :], reverse=True)
        pieces.append(rise + fall)
    keys = torch.tensor(pieces, dtype=torch.int64).flatten().to(DEVICE)
    out = torch.empty_like(keys)
    _chunks_kernel[(1,)](keys, out, length, chunk, True)
    for c, piece in enumerate(out.view(-1, chunk).tolist()):
        assert piece == sorted(pieces[c], reverse=(c % 2 == 0))
