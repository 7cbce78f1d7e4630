"""Prefix sums along one axis of a register tile."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kb_prefix_sum(x, AXIS: tl.constexpr, EXCLUSIVE: tl.constexpr):
    """Inclusive (or exclusive) running sum of x along AXIS; padded lanes must hold 0 (they come last)."""
    total = tl.cumsum(x, axis=AXIS)
    if EXCLUSIVE:
        total = total - x
    return total


@triton.jit
def _kb_prefix_sum_carry(x, carry, AXIS: tl.constexpr):
    """Running sum of one chunk of a longer row: the chunk's inclusive sum plus the total of the chunks
    before it (`carry`, broadcast along AXIS); returns (sums, the carry for the next chunk)."""
    total = tl.cumsum(x, axis=AXIS) + carry
    return total, carry + tl.sum(x, axis=AXIS, keep_dims=True)
