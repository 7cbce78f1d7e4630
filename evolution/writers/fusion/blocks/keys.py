"""Packed sort keys: a float32 value and its index in one int64, ordered by value (larger first) and then by
index (smaller first), so one integer max finds both the best value and where it is, and a bitonic network
that moves keys moves the indices with them. A top-k block unpacks its keys itself (the value's bits from the
high half, the index from the low one): no helper more in the code a candidate carries."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kb_pack(x, index):
    """(float32 value, int32 index >= 0) -> int64 key: float bits order as integers once a negative's
    magnitude bits flip; an inverted index puts the smaller first."""
    bits = x.to(tl.int32, bitcast=True)
    bits = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    return (bits.to(tl.int64) << 32) | (2147483647 - index).to(tl.int64)


@triton.jit
def _kb_key_index(key):
    return 2147483647 - (key & 2147483647).to(tl.int32)


@triton.jit
def _kb_key_value(key):
    high = (key >> 32).to(tl.int32)
    bits = high ^ ((high >> 31) & 0x7FFFFFFF)
    return bits.to(tl.float32, bitcast=True)
