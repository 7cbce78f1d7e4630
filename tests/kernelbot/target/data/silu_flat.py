"""A second SiLU-and-mul candidate for the example's SiluAndMul.forward_native (see silu_rowwise.py): the
output treated as one flat range of rows * d elements, each program a block of it."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START


@triton.jit
def _silu_and_mul_flat(x_ptr, out_ptr, n, d, x_row_stride, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    row = offsets // d
    col = offsets % d
    gate = tl.load(x_ptr + row * x_row_stride + col, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * x_row_stride + d + col, mask=mask, other=0.0).to(tl.float32)
    silu = gate * tl.sigmoid(gate)
    tl.store(out_ptr + offsets, (silu * up).to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul_forward_native(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    x2 = x.view(-1, x.shape[-1])
    n = x2.shape[0] * d
    if n == 0:
        return out
    grid = (triton.cdiv(n, 1024),)
    _silu_and_mul_flat[grid](x2, out, n, d, x2.stride(0), BLOCK=1024, num_warps=4)
    return out


# EVOLVE-BLOCK-END
