"""silu_and_mul variant: big programs as [TILE_BLOCKS, BLOCK] tiles of consecutive row-aligned blocks.

Large bf16 inputs: each program moves TILE_BLOCKS x BLOCK outputs (8192 by default, 8 warps): every thread
has several independent 16-byte loads in flight, and only TILE_BLOCKS scalar divisions by the constant d
per program find the rows (a block is a power of two dividing d, so it lies in one row). The tile's spare
blocks past the end are masked per block, a mask constant along the contiguous axis (still vectorised).
Decode sizes keep one small block per program.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START

SMALL_NUMEL = 1 << 16
MIN_ALIGNED_BLOCK = 64
SMALL_BLOCK = 256
SMALL_TILE_BLOCKS = 1
SMALL_WARPS = 2
LARGE_BLOCK = 2048
LARGE_TILE_BLOCKS = 4
LARGE_WARPS = 8


@triton.jit
def _silu_and_mul_tile_kernel(
    x_ptr,
    out_ptr,
    n_blocks,
    D: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    TILE_BLOCKS: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    blocks = pid * TILE_BLOCKS + tl.arange(0, TILE_BLOCKS)
    starts = blocks * BLOCK_SIZE
    gate_starts = tl.multiple_of(starts + (starts // D) * D, BLOCK_SIZE)
    cols = tl.arange(0, BLOCK_SIZE)[None, :]
    mask = (blocks < n_blocks)[:, None]
    gate_ptrs = x_ptr + gate_starts[:, None] + cols
    gate = tl.load(gate_ptrs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    up = tl.load(gate_ptrs + D, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    y = (gate * tl.sigmoid(gate) * up).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + starts[:, None] + cols, y, mask=mask)


@triton.jit
def _silu_and_mul_flat_kernel(
    x_ptr,
    out_ptr,
    n_out,
    D: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
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
        block_size, tile_blocks, num_warps = SMALL_BLOCK, SMALL_TILE_BLOCKS, SMALL_WARPS
    else:
        block_size, tile_blocks, num_warps = LARGE_BLOCK, LARGE_TILE_BLOCKS, LARGE_WARPS
    # The tile's spare blocks index up to a tile past the end: their offsets must fit too.
    wide_index = 2 * n_out + 2 * block_size * tile_blocks >= 2**31
    aligned_block = min(block_size, d & -d)
    if aligned_block >= MIN_ALIGNED_BLOCK:
        n_blocks = n_out // aligned_block
        _silu_and_mul_tile_kernel[(triton.cdiv(n_blocks, tile_blocks),)](
            x,
            out,
            n_blocks,
            D=d,
            BLOCK_SIZE=aligned_block,
            TILE_BLOCKS=tile_blocks,
            WIDE_INDEX=wide_index,
            num_warps=num_warps,
        )
        return out
    block_size = min(block_size, triton.next_power_of_2(n_out))
    _silu_and_mul_flat_kernel[(triton.cdiv(n_out, block_size),)](
        x, out, n_out, D=d, BLOCK_SIZE=block_size, WIDE_INDEX=wide_index, num_warps=num_warps
    )
    return out


# EVOLVE-BLOCK-END
