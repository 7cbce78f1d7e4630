"""Bitonic networks along the last axis of an [R, L] tile (L a power of two) of integer keys; with packed keys
(keys.py) the indices travel with the values. A compare-exchange at distance B views the tile as
[R, L / 2B, 2, B], takes both halves out with a masked sum over the axis of two, and orders each pair
descending or ascending by the parity of its block of SPAN keys (so the chunks a sort leaves alternate:
descending, ascending, descending...)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kb_compare_exchange(x, B: tl.constexpr, SPAN: tl.constexpr):
    R: tl.constexpr = x.shape[0]
    L: tl.constexpr = x.shape[1]
    pairs = tl.reshape(x, [R, L // (2 * B), 2, B])
    side = tl.arange(0, 2)[None, None, :, None]
    first = tl.sum(tl.where(side == 0, pairs, 0), axis=2, keep_dims=True)
    second = tl.sum(tl.where(side == 1, pairs, 0), axis=2, keep_dims=True)
    big = tl.maximum(first, second)
    small = tl.minimum(first, second)
    block = tl.arange(0, L // (2 * B))[None, :, None, None]
    descending = ((block // (SPAN // (2 * B))) & 1) == 0
    out = tl.where(side == 0, tl.where(descending, big, small), tl.where(descending, small, big))
    return tl.reshape(out, [R, L])


@triton.jit
def _kb_bitonic_sort_chunks(x, CHUNK: tl.constexpr):
    """Sort every chunk of CHUNK keys (even chunks descending, odd ascending); CHUNK = L sorts each row
    descending."""
    for s in tl.static_range(20):
        if (2 << s) <= CHUNK:
            for t in tl.static_range(s + 1):
                x = _kb_compare_exchange(x, (2 << s) >> (t + 1), 2 << s)
    return x


@triton.jit
def _kb_bitonic_merge(x, CHUNK: tl.constexpr):
    """Order every bitonic chunk of CHUNK keys (even chunks descending, odd ascending)."""
    for t in tl.static_range(20):
        if (CHUNK >> (t + 1)) >= 1:
            x = _kb_compare_exchange(x, CHUNK >> (t + 1), CHUNK)
    return x


@triton.jit
def _kb_sort_rows(keys):
    """Every row of keys [R, L] sorted descending."""
    return _kb_bitonic_sort_chunks(keys, keys.shape[1])
