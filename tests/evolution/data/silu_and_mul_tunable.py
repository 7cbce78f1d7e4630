"""SiLU-and-mul with its launch parameters as plain literals, so launch-parameter tuning has sites to move
(the example task's own candidate derives them from the shape). Seed of the search's end-to-end tests."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, d, x_row_stride, out_row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < d
    gate = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * x_row_stride + d + cols, mask=mask, other=0.0).to(tl.float32)
    out = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * out_row_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    x2 = x.view(-1, x.shape[-1])
    out2 = out.view(-1, d)
    if x2.shape[0] == 0 or d == 0:
        return out
    BLOCK_SIZE = 512
    grid = (x2.shape[0], triton.cdiv(d, BLOCK_SIZE))
    _silu_and_mul_kernel[grid](x2, out2, d, x2.stride(0), out2.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    return out


# EVOLVE-BLOCK-END
