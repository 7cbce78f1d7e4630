"""A SiLU-and-mul candidate for the task drafted from LMDeploy 0.18.0's DefaultSiluAndMulImpl.forward (entry
`default_silu_and_mul_impl_forward`, the gate and up halves of the last dimension): one program per (row,
column block), silu in fp32, one rounding to the output dtype. The release's target road test starts its
search from it instead of from the Inductor seed, so the search is one evaluation."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START


@triton.jit
def _silu_and_mul_rows(x_ptr, out_ptr, d, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    gate = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * x_row_stride + d + cols, mask=mask, other=0.0).to(tl.float32)
    out = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * out_row_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def default_silu_and_mul_impl_forward(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    x2 = x.reshape(-1, x.shape[-1])
    out2 = out.view(-1, d)
    if x2.shape[0] == 0 or d == 0:
        return out
    grid = (x2.shape[0], triton.cdiv(d, 1024))
    _silu_and_mul_rows[grid](x2, out2, d, x2.stride(0), out2.stride(0), BLOCK=1024, num_warps=4)
    return out


# EVOLVE-BLOCK-END
