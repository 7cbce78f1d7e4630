"""Class 14 — one case drives the aggregate (target: scale_add, on a GPU).

Tuned for the large case only: there it runs one efficient kernel; on every other size it splits the work
into many small launches and is slower than the reference. The geometric mean is still "a speedup" because of
one case. Correct everywhere, so only the scoring can see it: without that case the rest is a slowdown.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, start, n, alpha, BLOCK: tl.constexpr):
    offs = start + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask
    )


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    if n >= 2048:
        _scale_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, 0, n, alpha, BLOCK=1024)
    else:
        for start in range(0, n, 256):
            _scale_add_kernel[(1,)](x, y, out, start, n, alpha, BLOCK=256)
    return out
