"""Row-wise root-mean-square, one Triton program per row (the candidate).
Synthetic kernel of bench/stability.py."""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_rms_kernel(x_ptr, y_ptr, cols, row_stride, inv_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * row_stride + offs, mask=offs < cols, other=0.0)
    tl.store(y_ptr + row, tl.sqrt(tl.sum(x * x, axis=0) * inv_cols))


def row_rms(x):
    rows, cols = x.shape
    y = torch.empty(rows, device=x.device, dtype=x.dtype)
    _row_rms_kernel[(rows,)](x, y, cols, x.stride(0), 1.0 / cols, BLOCK=triton.next_power_of_2(cols))
    return y
