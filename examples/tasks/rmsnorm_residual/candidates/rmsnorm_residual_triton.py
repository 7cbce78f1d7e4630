"""Fused residual add + RMSNorm: each program normalises ROWS_PER_PROGRAM token rows kept in registers.

Rows up to MAX_FUSED_COLS wide are read once (x and residual), reduced and written (out and residual_out).
Decode-sized batches give each row its own program; larger batches put several rows in one program, so
fewer, fuller programs stream the rows. Wider rows are processed in chunks, one row per program: a first
pass writes residual_out and accumulates the sum of squares, a second pass re-reads x and residual (not the
rounded residual_out, whose bf16 rounding would leak into out).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START

# Batches of at most this many rows count as decode-sized; rows wider than MAX_FUSED_COLS are chunked.
SMALL_BATCH_ROWS = 64
MAX_FUSED_COLS = 8192
# Decode-sized: one row per program, 16 warps (8 bf16 of a 4096-wide row per thread: one 128-bit access).
SMALL_BATCH_WARPS = 16
# Larger batches: several rows per program.
LARGE_BATCH_ROWS_PER_PROGRAM = 2
LARGE_BATCH_WARPS = 16
# Rows wider than MAX_FUSED_COLS: chunks of CHUNK_BLOCK columns, loads pipelined over CHUNK_STAGES.
CHUNK_BLOCK = 4096
CHUNK_WARPS = 8
CHUNK_STAGES = 2


@triton.jit
def _rmsnorm_residual_rows_kernel(
    x_ptr,
    residual_ptr,
    weight_ptr,
    out_ptr,
    residual_out_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    residual_row_stride,
    out_row_stride,
    residual_out_row_stride,
    eps,
    BLOCK_SIZE: tl.constexpr,
    ROWS_PER_PROGRAM: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)
    cols = tl.arange(0, BLOCK_SIZE)
    col_ok = cols < n_cols
    mask = (rows < n_rows)[:, None] & col_ok[None, :]
    rows2, cols2 = rows[:, None], cols[None, :]
    h = tl.load(x_ptr + rows2 * x_row_stride + cols2, mask=mask, other=0.0).to(tl.float32)
    h += tl.load(residual_ptr + rows2 * residual_row_stride + cols2, mask=mask, other=0.0).to(tl.float32)
    tl.store(
        residual_out_ptr + rows2 * residual_out_row_stride + cols2,
        h.to(residual_out_ptr.dtype.element_ty),
        mask=mask,
    )
    inv_rms = tl.rsqrt(tl.sum(h * h, axis=1) / n_cols + eps)
    w = tl.load(weight_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    out = h * inv_rms[:, None] * w[None, :]
    tl.store(out_ptr + rows2 * out_row_stride + cols2, out.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_residual_chunked_kernel(
    x_ptr,
    residual_ptr,
    weight_ptr,
    out_ptr,
    residual_out_ptr,
    n_cols,
    x_row_stride,
    residual_row_stride,
    out_row_stride,
    residual_out_row_stride,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    residual_row = residual_ptr + row * residual_row_stride
    out_row = out_ptr + row * out_row_stride
    residual_out_row = residual_out_ptr + row * residual_out_row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    sum_sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        h = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        h += tl.load(residual_row + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(residual_out_row + offs, h.to(residual_out_ptr.dtype.element_ty), mask=mask)
        sum_sq += h * h
    inv_rms = tl.rsqrt(tl.sum(sum_sq, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
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
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    residual_out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    x2, residual2 = x.reshape(-1, n_cols), residual.reshape(-1, n_cols)
    out2, residual_out2 = out.view(-1, n_cols), residual_out.view(-1, n_cols)
    n_rows = x2.shape[0]
    if n_rows == 0 or n_cols == 0:
        return out, residual_out
    # The kernels index columns with unit stride.
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    if residual2.stride(-1) != 1:
        residual2 = residual2.contiguous()
    weight = weight if weight.stride(-1) == 1 else weight.contiguous()
    strides = (x2.stride(0), residual2.stride(0), out2.stride(0), residual_out2.stride(0))
    block_size = triton.next_power_of_2(n_cols)
    if block_size > MAX_FUSED_COLS:
        _rmsnorm_residual_chunked_kernel[(n_rows,)](
            x2,
            residual2,
            weight,
            out2,
            residual_out2,
            n_cols,
            *strides,
            eps,
            BLOCK_SIZE=CHUNK_BLOCK,
            num_warps=CHUNK_WARPS,
            num_stages=CHUNK_STAGES,
        )
        return out, residual_out
    if n_rows <= SMALL_BATCH_ROWS:
        rows_per_program, num_warps = 1, SMALL_BATCH_WARPS
    else:
        rows_per_program, num_warps = LARGE_BATCH_ROWS_PER_PROGRAM, LARGE_BATCH_WARPS
    _rmsnorm_residual_rows_kernel[(triton.cdiv(n_rows, rows_per_program),)](
        x2,
        residual2,
        weight,
        out2,
        residual_out2,
        n_rows,
        n_cols,
        *strides,
        eps,
        BLOCK_SIZE=block_size,
        ROWS_PER_PROGRAM=rows_per_program,
        num_warps=num_warps,
    )
    return out, residual_out


# EVOLVE-BLOCK-END
