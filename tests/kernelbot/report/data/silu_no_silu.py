"""A wrong SiLU-and-mul: multiplies gate and up without the SiLU, so the correctness stage stops it with a
mismatch (the report's failure feedback shows which output differed, where and by how much)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START


@triton.jit
def _gate_times_up_kernel(x_ptr, out_ptr, d, x_row_stride, out_row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < d
    gate = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * x_row_stride + d + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_row_stride + cols, (gate * up).to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    x2 = x.view(-1, x.shape[-1])
    out2 = out.view(-1, d)
    BLOCK_SIZE = 256
    grid = (x2.shape[0], triton.cdiv(d, BLOCK_SIZE))
    _gate_times_up_kernel[grid](x2, out2, d, x2.stride(0), out2.stride(0), BLOCK_SIZE=BLOCK_SIZE)
    return out


# EVOLVE-BLOCK-END
