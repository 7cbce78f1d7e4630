"""A SiLU-and-mul candidate that is wrong (it forgets the gate's sigmoid): the evaluator rejects it, so a
search that has only this seed ends without a kernel."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START


@triton.jit
def _gate_times_up(x_ptr, out_ptr, n, d, x_row_stride, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    row = offsets // d
    col = offsets % d
    gate = tl.load(x_ptr + row * x_row_stride + col, mask=mask, other=0.0)
    up = tl.load(x_ptr + row * x_row_stride + d + col, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, gate * up, mask=mask)


def silu_and_mul_forward_native(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    x2 = x.view(-1, x.shape[-1])
    n = x2.shape[0] * d
    if n:
        _gate_times_up[(triton.cdiv(n, 1024),)](x2, out, n, d, x2.stride(0), BLOCK=1024)
    return out


# EVOLVE-BLOCK-END
