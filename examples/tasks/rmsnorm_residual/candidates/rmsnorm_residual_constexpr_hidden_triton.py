"""Fused residual add + RMSNorm with the row width a compile-time constant, as in torch.compile's static
kernels (a third seed; from the bench/variants sweeps on the H200).

hidden never varies at serving time (only tokens does), so one compilation per width costs nothing. With
N_COLS constexpr a power-of-two row needs no mask at all, the mean divides by a constant, and offsets are
32-bit when they fit: the instruction stream Inductor emits for dynamic=False. One row per program.

Many rows (prefill) take a two-pass loop instead, the shape of the config compile's autotuner picks there:
the first pass reads the row with evict_last and sums squares, the second finds it in L2, reads it with
evict_first and stores both outputs. On the H200 that took the 4096-token bf16 cases from 0.95x/0.98x of
compile to 1.00x/1.03x (4096-column slices, 16 warps).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START

MAX_FUSED_COLS = 16384  # wider rows: chunked two-pass kernel
CHUNK_BLOCK = 4096
CHUNK_WARPS = 8
NARROW_ROW_COLS = 4096
NARROW_ROW_WARPS = 8
WIDE_ROW_WARPS = 16
TWO_PASS_MIN_ROWS = 2048  # this many rows or more: the two-pass kernel below
TWO_PASS_BLOCK = 4096
TWO_PASS_WARPS = 16


@triton.jit
def _rmsnorm_residual_static_kernel(
    x_ptr,
    residual_ptr,
    weight_ptr,
    out_ptr,
    residual_out_ptr,
    x_row_stride,
    residual_row_stride,
    out_row_stride,
    residual_out_row_stride,
    eps,
    N_COLS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
    row = tl.program_id(0)
    if WIDE_INDEX:
        row = row.to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    x_offs = row * x_row_stride + cols
    r_offs = row * residual_row_stride + cols
    ro_offs = row * residual_out_row_stride + cols
    o_offs = row * out_row_stride + cols
    if BLOCK_SIZE == N_COLS:
        w = tl.load(weight_ptr + cols).to(tl.float32)
        h = tl.load(x_ptr + x_offs).to(tl.float32) + tl.load(residual_ptr + r_offs).to(tl.float32)
        tl.store(residual_out_ptr + ro_offs, h.to(residual_out_ptr.dtype.element_ty))
        inv_rms = tl.rsqrt(tl.sum(h * h, axis=0) / N_COLS + eps)
        tl.store(out_ptr + o_offs, (h * inv_rms * w).to(out_ptr.dtype.element_ty))
    else:
        mask = cols < N_COLS
        w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        h = tl.load(x_ptr + x_offs, mask=mask, other=0.0).to(tl.float32)
        h += tl.load(residual_ptr + r_offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(residual_out_ptr + ro_offs, h.to(residual_out_ptr.dtype.element_ty), mask=mask)
        inv_rms = tl.rsqrt(tl.sum(h * h, axis=0) / N_COLS + eps)
        tl.store(out_ptr + o_offs, (h * inv_rms * w).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_residual_two_pass_kernel(
    x_ptr,
    residual_ptr,
    weight_ptr,
    out_ptr,
    residual_out_ptr,
    x_row_stride,
    residual_row_stride,
    out_row_stride,
    residual_out_row_stride,
    eps,
    N_COLS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
    row = tl.program_id(0)
    if WIDE_INDEX:
        row = row.to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    x_row = x_ptr + row * x_row_stride
    r_row = residual_ptr + row * residual_row_stride
    sum_sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in tl.range(0, N_COLS, BLOCK_SIZE):
        offs = start + cols
        mask = offs < N_COLS
        h = tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        h += tl.load(r_row + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        sum_sq += h * h
    inv_rms = tl.rsqrt(tl.sum(sum_sq, axis=0) / N_COLS + eps)
    for start in tl.range(0, N_COLS, BLOCK_SIZE):
        offs = start + cols
        mask = offs < N_COLS
        h = tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        h += tl.load(r_row + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(weight_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        tl.store(
            residual_out_ptr + row * residual_out_row_stride + offs,
            h.to(residual_out_ptr.dtype.element_ty),
            mask=mask,
        )
        normed = (h * inv_rms * w).to(out_ptr.dtype.element_ty)
        tl.store(out_ptr + row * out_row_stride + offs, normed, mask=mask)


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
    # Rows too wide for registers: pass 1 writes residual_out and sums squares, pass 2 re-reads the inputs.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    sum_sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        h = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
        h += tl.load(residual_ptr + row * residual_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(
            residual_out_ptr + row * residual_out_row_stride + offs,
            h.to(residual_out_ptr.dtype.element_ty),
            mask=mask,
        )
        sum_sq += h * h
    inv_rms = tl.rsqrt(tl.sum(sum_sq, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        h = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
        h += tl.load(residual_ptr + row * residual_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(
            out_ptr + row * out_row_stride + offs, (h * inv_rms * w).to(out_ptr.dtype.element_ty), mask=mask
        )


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
    tensors = (x2, residual2, weight, out2, residual_out2)
    block_size = triton.next_power_of_2(n_cols)
    if block_size > MAX_FUSED_COLS:
        _rmsnorm_residual_chunked_kernel[(n_rows,)](
            *tensors, n_cols, *strides, eps, BLOCK_SIZE=CHUNK_BLOCK, num_warps=CHUNK_WARPS
        )
        return out, residual_out
    # 32-bit offsets unless the last row's end lies past 2**31 elements in one of the tensors.
    wide_index = max(strides) * (n_rows - 1) + n_cols >= 2**31
    if n_rows >= TWO_PASS_MIN_ROWS:
        _rmsnorm_residual_two_pass_kernel[(n_rows,)](
            *tensors,
            *strides,
            eps,
            N_COLS=n_cols,
            BLOCK_SIZE=min(TWO_PASS_BLOCK, block_size),
            WIDE_INDEX=wide_index,
            num_warps=TWO_PASS_WARPS,
        )
        return out, residual_out
    _rmsnorm_residual_static_kernel[(n_rows,)](
        *tensors,
        *strides,
        eps,
        N_COLS=n_cols,
        BLOCK_SIZE=block_size,
        WIDE_INDEX=wide_index,
        num_warps=NARROW_ROW_WARPS if block_size <= NARROW_ROW_COLS else WIDE_ROW_WARPS,
    )
    return out, residual_out


# EVOLVE-BLOCK-END
