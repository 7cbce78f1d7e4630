"""Legitimate: the host prepares layout and dtype the way shipped wrappers do (`.contiguous()`, `.view`,
`.reshape`, `.to(torch.float32)` / `.float()` on float32 inputs, a transpose made contiguous, a fresh
output viewed back into shape): none of it computes the answer, all of it is timed with the kernel."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * alpha + y, mask=mask)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    shape = x.shape
    x_flat = x.float().contiguous().view(-1)
    y_flat = y.to(torch.float32).reshape(-1).unsqueeze(0).flatten()
    # A round trip through a transposed copy: a layout change and back, values untouched.
    y_flat = y_flat.view(1, -1).transpose(0, 1).contiguous().view(-1)
    out = torch.empty_like(x_flat)
    n = x_flat.numel()
    _scale_add_kernel[(triton.cdiv(n, 1024),)](x_flat, y_flat, out, n, alpha, BLOCK=1024)
    return out.view(shape)
