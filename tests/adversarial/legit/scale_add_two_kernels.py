"""Legitimate but unusual: two kernels, a zero-filled workspace, a 2-D view with explicit strides and a
heuristics decorator. Nothing here is PyTorch compute: zeros is an allocation, views are metadata."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(
    x_ptr,
    tmp_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    tmp_row_stride,
    alpha,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask)
    tl.store(tmp_ptr + rows[:, None] * tmp_row_stride + cols[None, :], x * alpha, mask=mask)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def _add_kernel(tmp_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(tmp_ptr + offs) + tl.load(y_ptr + offs))
    else:
        mask = offs < n
        a = tl.load(tmp_ptr + offs, mask=mask)
        b = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, a + b, mask=mask)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    n = x.numel()
    cols = 40 if n % 40 == 0 else 1
    x2 = x.view(-1, cols)
    rows = x2.shape[0]
    tmp = torch.zeros((rows, cols), dtype=x.dtype, device=x.device)
    block_r = 32 if cols > 1 else 512
    _scale_kernel[(triton.cdiv(rows, block_r),)](
        x2, tmp, rows, cols, x2.stride(0), tmp.stride(0), alpha, BLOCK_R=block_r, BLOCK_C=64
    )
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _add_kernel[(triton.cdiv(n, 512),)](tmp.view(-1), y, out, n, BLOCK=512)
    return out
