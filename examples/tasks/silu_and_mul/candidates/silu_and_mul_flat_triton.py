"""SiLU-and-mul over a 1-D grid of output elements: program p writes output elements
[p * BLOCK, (p + 1) * BLOCK) of the contiguous [rows, d] output, whatever rows they fall in.

Every program does the same amount of work however rows and d split the problem, and the output is one
contiguous stream. Output element i reads gate at (i // d) * 2d + i % d and up d elements further; when d is
a multiple of 16 (Triton's default integer specialisation), those offsets stay contiguous in runs of 16, so
the loads and the store are 128-bit wide. Offsets are 32-bit unless the input is too large for that.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START

# Problems of at most this many output elements are latency-bound (decode batches): small programs, many of
# them. Up to MEDIUM_NUMEL: a middle size; above it: bandwidth-bound, fuller programs.
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
    d,
    BLOCK_SIZE: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_out
    row = offs // d
    gate_offs = offs + row * d  # row * 2d + (offs - row * d)
    gate = tl.load(x_ptr + gate_offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + gate_offs + d, mask=mask, other=0.0).to(tl.float32)
    # For gate -> -inf, sigmoid goes to 0 and the product to -0, as it should.
    silu = gate * tl.sigmoid(gate)
    tl.store(out_ptr + offs, (silu * up).to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    n_out = out.numel()
    if n_out == 0:
        return out
    # The flat index needs rows back to back in memory; any other layout is copied once.
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
        d,
        BLOCK_SIZE=block_size,
        WIDE_INDEX=2 * n_out + block_size >= 2**31,
        num_warps=num_warps,
    )
    return out


# EVOLVE-BLOCK-END
