"""rmsnorm_residual variant: a non-power-of-two row as up to three unmasked power-of-two pieces in registers.

hidden 7168 = 4096 + 2048 + 1024. One 8192-wide masked block (the seeds, and Inductor's RBLOCK) leaves an
eighth of the threads idle and carries a mask on every access; three exact pieces keep every lane busy and
drop the masks. Widths with more than MAX_PIECES set bits (or a piece below MIN_PIECE) take one masked block.
One row per program, all loads issued before the reduction, cache hints, 32-bit offsets when they fit.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START

MAX_FUSED_COLS = 16384  # wider rows: chunked two-pass kernel
CHUNK_BLOCK = 4096
CHUNK_WARPS = 8
MAX_PIECES = 3
MIN_PIECE = 256
NARROW_ROW_COLS = 4096
NARROW_ROW_WARPS = 8
WIDE_ROW_WARPS = 8


@triton.jit
def _rmsnorm_residual_pieces_kernel(
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
    P0: tl.constexpr,
    P1: tl.constexpr,
    P2: tl.constexpr,
    EXACT: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
):
    row = tl.program_id(0)
    if WIDE_INDEX:
        row = row.to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    r_row = residual_ptr + row * residual_row_stride
    ro_row = residual_out_ptr + row * residual_out_row_stride
    o_row = out_ptr + row * out_row_stride
    c0 = tl.arange(0, P0)
    if EXACT:
        w0 = tl.load(weight_ptr + c0, eviction_policy="evict_last").to(tl.float32)
        h0 = tl.load(x_row + c0, eviction_policy="evict_first").to(tl.float32)
        h0 += tl.load(r_row + c0, eviction_policy="evict_first").to(tl.float32)
        tl.store(ro_row + c0, h0.to(residual_out_ptr.dtype.element_ty))
    else:
        m0 = c0 < n_cols
        w0 = tl.load(weight_ptr + c0, mask=m0, other=0.0, eviction_policy="evict_last").to(tl.float32)
        h0 = tl.load(x_row + c0, mask=m0, other=0.0, eviction_policy="evict_first").to(tl.float32)
        h0 += tl.load(r_row + c0, mask=m0, other=0.0, eviction_policy="evict_first").to(tl.float32)
        tl.store(ro_row + c0, h0.to(residual_out_ptr.dtype.element_ty), mask=m0)
    sum_sq = tl.sum(h0 * h0, axis=0)
    if P1 > 0:
        c1 = P0 + tl.arange(0, P1)
        w1 = tl.load(weight_ptr + c1, eviction_policy="evict_last").to(tl.float32)
        h1 = tl.load(x_row + c1, eviction_policy="evict_first").to(tl.float32)
        h1 += tl.load(r_row + c1, eviction_policy="evict_first").to(tl.float32)
        tl.store(ro_row + c1, h1.to(residual_out_ptr.dtype.element_ty))
        sum_sq += tl.sum(h1 * h1, axis=0)
    if P2 > 0:
        c2 = P0 + P1 + tl.arange(0, P2)
        w2 = tl.load(weight_ptr + c2, eviction_policy="evict_last").to(tl.float32)
        h2 = tl.load(x_row + c2, eviction_policy="evict_first").to(tl.float32)
        h2 += tl.load(r_row + c2, eviction_policy="evict_first").to(tl.float32)
        tl.store(ro_row + c2, h2.to(residual_out_ptr.dtype.element_ty))
        sum_sq += tl.sum(h2 * h2, axis=0)
    inv_rms = tl.rsqrt(sum_sq / n_cols + eps)
    if EXACT:
        tl.store(o_row + c0, (h0 * inv_rms * w0).to(out_ptr.dtype.element_ty))
    else:
        tl.store(o_row + c0, (h0 * inv_rms * w0).to(out_ptr.dtype.element_ty), mask=c0 < n_cols)
    if P1 > 0:
        tl.store(o_row + c1, (h1 * inv_rms * w1).to(out_ptr.dtype.element_ty))
    if P2 > 0:
        tl.store(o_row + c2, (h2 * inv_rms * w2).to(out_ptr.dtype.element_ty))


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
    # Set bits of n_cols, largest first: the exact power-of-two pieces of the row.
    pieces = [1 << bit for bit in range(n_cols.bit_length() - 1, -1, -1) if n_cols >> bit & 1]
    exact = len(pieces) <= min(MAX_PIECES, 3) and pieces[-1] >= MIN_PIECE
    if not exact:
        pieces = [block_size]
    pieces += [0] * (3 - len(pieces))
    _rmsnorm_residual_pieces_kernel[(n_rows,)](
        *tensors,
        n_cols,
        *strides,
        eps,
        P0=pieces[0],
        P1=pieces[1],
        P2=pieces[2],
        EXACT=exact,
        WIDE_INDEX=wide_index,
        num_warps=NARROW_ROW_WARPS if block_size <= NARROW_ROW_COLS else WIDE_ROW_WARPS,
    )
    return out, residual_out


# EVOLVE-BLOCK-END
