"""Probe: the constexpr-d seed (examples/tasks/silu_and_mul/candidates/silu_and_mul_constexpr_d_triton.py)
with silu written as Inductor writes it, gate / (1 + exp(-gate)) with libdevice's expf, instead of tl.sigmoid.

GPU only (the Triton interpreter has no libdevice), so it lives outside bench/variants; bench/h200.sh
`twentyeighth` timed it against torch.compile.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

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
):
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_out
    gate_offs = offs + (offs // D) * D  # row * 2D + column
    gate = tl.load(x_ptr + gate_offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + gate_offs + D, mask=mask, other=0.0).to(tl.float32)
    tl.store(
        out_ptr + offs, (gate / (1.0 + libdevice.exp(-gate)) * up).to(out_ptr.dtype.element_ty), mask=mask
    )


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
        num_warps=num_warps,
    )
    return out


# EVOLVE-BLOCK-END
