"""An RMSNorm candidate for the example's RMSNorm.forward_native: one program per row, the residual added
and the row normalised in fp32, one rounding to the output dtype. The scan tests start their searches from
it (and from the target tests' SiLU seed) so each search stops at its first correct candidate."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START


@triton.jit
def _rms_norm_rows(
    x_ptr,
    res_ptr,
    w_ptr,
    out_ptr,
    new_res_ptr,
    n,
    eps,
    x_row_stride,
    res_row_stride,
    HAS_RESIDUAL: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        x += tl.load(res_ptr + row * res_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(new_res_ptr + row * n + cols, x.to(new_res_ptr.dtype.element_ty), mask=mask)
    variance = tl.sum(x * x, axis=0) / n
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.rsqrt(variance + eps) * w
    tl.store(out_ptr + row * n + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm_forward_native(x: torch.Tensor, residual: torch.Tensor | None = None, *, eps, weight):
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    out = torch.empty(x2.shape, dtype=x.dtype, device=x.device)
    new_res = torch.empty(x2.shape, dtype=x.dtype, device=x.device) if residual is not None else out
    res2 = residual.reshape(-1, n) if residual is not None else x2
    if x2.shape[0] > 0:
        _rms_norm_rows[(x2.shape[0],)](
            x2,
            res2,
            weight,
            out,
            new_res,
            n,
            eps,
            x2.stride(0),
            res2.stride(0),
            HAS_RESIDUAL=residual is not None,
            BLOCK=triton.next_power_of_2(n),
        )
    out = out.view(x.shape)
    return out if residual is None else (out, new_res.view(x.shape))


# EVOLVE-BLOCK-END
