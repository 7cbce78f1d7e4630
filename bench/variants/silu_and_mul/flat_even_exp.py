"""Variant: the flat constexpr-d seed written as Inductor writes its static pointwise kernel for this op
(its output code on the H200, 2026-11-29): no mask when the block count divides the output (EVEN, a
compile-time flag), and silu as gate / (1 + exp(-gate)) rather than gate * sigmoid(gate).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START

SMALL_NUMEL = 1 << 16
MEDIUM_NUMEL = 1 << 22
SMALL_BLOCK = 512
SMALL_WARPS = 2
MEDIUM_BLOCK = 1024
MEDIUM_WARPS = 4
LARGE_BLOCK = 2048
LARGE_WARPS = 8


@triton.jit
def _silu_and_mul_flat_kernel(
    x_ptr,
    out_ptr,
    n_out,
    D: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
    EVEN: tl.constexpr,
):
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    gate_offs = offs + (offs // D) * D  # row * 2D + column
    if EVEN:
        gate = tl.load(x_ptr + gate_offs).to(tl.float32)
        up = tl.load(x_ptr + gate_offs + D).to(tl.float32)
        tl.store(out_ptr + offs, (gate / (1.0 + tl.exp(-gate)) * up).to(out_ptr.dtype.element_ty))
    else:
        mask = offs < n_out
        gate = tl.load(x_ptr + gate_offs, mask=mask, other=0.0).to(tl.float32)
        up = tl.load(x_ptr + gate_offs + D, mask=mask, other=0.0).to(tl.float32)
        silu = gate / (1.0 + tl.exp(-gate))
        tl.store(out_ptr + offs, (silu * up).to(out_ptr.dtype.element_ty), mask=mask)


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
    block_size = min(block_size, triton.next_power_of_2(n_out))
    _silu_and_mul_flat_kernel[(triton.cdiv(n_out, block_size),)](
        x,
        out,
        n_out,
        D=d,
        BLOCK_SIZE=block_size,
        WIDE_INDEX=2 * n_out + block_size >= 2**31,
        EVEN=n_out % block_size == 0,
        num_warps=num_warps,
    )
    return out


# EVOLVE-BLOCK-END
