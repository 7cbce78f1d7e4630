"""Reads of a register tile at positions held in another tile (no trip through memory)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kb_take_rows(src, index):
    """src [R, N], index [R, M] (ints in [0, N)) -> [R, M] with src[r, index[r, m]]."""
    lanes = tl.arange(0, src.shape[1])[None, None, :]
    hit = index[:, :, None] == lanes
    return tl.sum(tl.where(hit, src[:, None, :], 0), axis=2)


@triton.jit
def _kb_pick(src, lanes, position, AXIS: tl.constexpr):
    """The element of src along AXIS at `position` (lanes: the index of every element along AXIS)."""
    return tl.sum(tl.where(lanes == position, src, 0), axis=AXIS)
