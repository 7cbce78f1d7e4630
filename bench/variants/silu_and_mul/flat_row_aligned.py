"""silu_and_mul variant: row-aligned flat blocks: no per-element division and no masks.

With d a compile-time constant and the block a power of two dividing d (d 1792 = 7 * 256, 14336 = 7 * 2048,
18432 = 9 * 2048), every block of output elements lies in one row: one scalar division per program finds it,
and the block count divides the output exactly, so loads and stores carry no mask. evict_first on the
read-once input. Widths with a small power-of-two factor fall back to a flat kernel dividing by the constant.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START

SMALL_NUMEL = 1 << 16
MEDIUM_NUMEL = 1 << 22
MIN_ALIGNED_BLOCK = 64  # below this the aligned block is too short for full-width programs
SMALL_BLOCK = 256
SMALL_WARPS = 2
MEDIUM_BLOCK = 1024
MEDIUM_WARPS = 4
LARGE_BLOCK = 2048
LARGE_WARPS = 8


@triton.jit
def _silu_and_mul_aligned_kernel(
    x_ptr,
    out_ptr,
    D: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
    # BLOCK_SIZE divides D: the block lies in one row, found with one scalar division; no mask is needed.
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    start = pid * BLOCK_SIZE
    row = start // D
    gate_start = tl.multiple_of(start + row * D, BLOCK_SIZE)  # row * 2D + column
    offs = tl.arange(0, BLOCK_SIZE)
    gate = tl.load(x_ptr + gate_start + offs, eviction_policy="evict_first").to(tl.float32)
    up = tl.load(x_ptr + gate_start + D + offs, eviction_policy="evict_first").to(tl.float32)
    tl.store(out_ptr + start + offs, (gate * tl.sigmoid(gate) * up).to(out_ptr.dtype.element_ty))


@triton.jit
def _silu_and_mul_flat_kernel(
    x_ptr,
    out_ptr,
    n_out,
    D: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
    # Widths with a small power-of-two factor: per-element division by the constant D, masked tail.
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_out
    gate_offs = offs + (offs // D) * D
    gate = tl.load(x_ptr + gate_offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + gate_offs + D, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (gate * tl.sigmoid(gate) * up).to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    n_out = out.numel()
    if n_out == 0:
        return out
    x = x if x.is_contiguous() else x.contiguous()
    if n_out <= SMALL_NUMEL:
        block_size, num_warps = SMALL_BLOCK, SMALL_WARPS
    elif n_out <= MEDIUM_NUMEL:
        block_size, num_warps = MEDIUM_BLOCK, MEDIUM_WARPS
    else:
        block_size, num_warps = LARGE_BLOCK, LARGE_WARPS
    wide_index = 2 * n_out + block_size >= 2**31
    aligned_block = min(block_size, d & -d)  # the largest power of two dividing d, capped
    if aligned_block >= MIN_ALIGNED_BLOCK:
        _silu_and_mul_aligned_kernel[(n_out // aligned_block,)](
            x, out, D=d, BLOCK_SIZE=aligned_block, WIDE_INDEX=wide_index, num_warps=num_warps
        )
        return out
    block_size = min(block_size, triton.next_power_of_2(n_out))
    _silu_and_mul_flat_kernel[(triton.cdiv(n_out, block_size),)](
        x, out, n_out, D=d, BLOCK_SIZE=block_size, WIDE_INDEX=wide_index, num_warps=num_warps
    )
    return out


# EVOLVE-BLOCK-END
