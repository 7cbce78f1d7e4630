"""Fused residual add + RMSNorm, row-wise: one program per token row, the row kept in registers when it fits.
A second seed beside rmsnorm_residual_triton.py (which tiles several rows per program): 1-D row programs,
warps chosen by row width.

Rows up to MAX_FUSED_BLOCK wide are read once (x and residual), reduced and written (out and residual_out).
Wider rows are processed in chunks: a first pass writes residual_out and accumulates the sum of squares, a
second pass re-reads x and residual (not the rounded residual_out, whose bf16 rounding would leak into out).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START

MAX_FUSED_BLOCK = 8192
CHUNK_BLOCK = 4096
# Rows up to NARROW_ROW_COLS wide (hidden 4096 and below) and wider rows each get their own warp count.
NARROW_ROW_COLS = 4096
NARROW_ROW_WARPS = 8
WIDE_ROW_WARPS = 16


@triton.jit
def _rmsnorm_residual_kernel(
    x_ptr,
    residual_ptr,
    weight_ptr,
    out_ptr,
    residual_out_ptr,
    x_row_stride,
    residual_row_stride,
    out_row_stride,
    residual_out_row_stride,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
    NUM_CHUNKS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    residual_row = residual_ptr + row * residual_row_stride
    out_row = out_ptr + row * out_row_stride
    residual_out_row = residual_out_ptr + row * residual_out_row_stride
    cols = tl.arange(0, BLOCK_SIZE)

    if NUM_CHUNKS == 1:
        mask = cols < n_cols
        h = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        h += tl.load(residual_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(residual_out_row + cols, h.to(residual_out_ptr.dtype.element_ty), mask=mask)
        inv_rms = tl.rsqrt(tl.sum(h * h, axis=0) / n_cols + eps)
        w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, (h * inv_rms * w).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        sum_sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for chunk in range(NUM_CHUNKS):
            offs = chunk * BLOCK_SIZE + cols
            mask = offs < n_cols
            h = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
            h += tl.load(residual_row + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(residual_out_row + offs, h.to(residual_out_ptr.dtype.element_ty), mask=mask)
            sum_sq += h * h
        inv_rms = tl.rsqrt(tl.sum(sum_sq, axis=0) / n_cols + eps)
        for chunk in range(NUM_CHUNKS):
            offs = chunk * BLOCK_SIZE + cols
            mask = offs < n_cols
            h = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
            h += tl.load(residual_row + offs, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(weight_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(out_row + offs, (h * inv_rms * w).to(out_ptr.dtype.element_ty), mask=mask)


def rmsnorm_residual(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, torch.Tensor]:
    n_cols = x.shape[-1]
    out = torch.empty_like(x)
    residual_out = torch.empty_like(x)
    x2, residual2 = x.view(-1, n_cols), residual.view(-1, n_cols)
    out2, residual_out2 = out.view(-1, n_cols), residual_out.view(-1, n_cols)
    n_rows = x2.shape[0]
    if n_rows == 0:
        return out, residual_out
    block_size = triton.next_power_of_2(n_cols)
    num_chunks = 1
    if block_size > MAX_FUSED_BLOCK:
        block_size = CHUNK_BLOCK
        num_chunks = triton.cdiv(n_cols, CHUNK_BLOCK)
    _rmsnorm_residual_kernel[(n_rows,)](
        x2,
        residual2,
        weight,
        out2,
        residual_out2,
        x2.stride(0),
        residual2.stride(0),
        out2.stride(0),
        residual_out2.stride(0),
        n_cols,
        eps,
        BLOCK_SIZE=block_size,
        NUM_CHUNKS=num_chunks,
        num_warps=NARROW_ROW_WARPS if block_size <= NARROW_ROW_COLS else WIDE_ROW_WARPS,
    )
    return out, residual_out


# EVOLVE-BLOCK-END
