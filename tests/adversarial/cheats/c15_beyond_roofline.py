"""Class 15 — faster than the hardware can be (target: scale_add_wall, on a GPU).

Remembers its last answer on the input tensor itself, keyed by the first few input values, and skips all work
while they are unchanged — which is exactly the situation of a timing loop (or a CUDA graph replay) on fixed
buffers. The correctness stage refills buffers with fresh values, so it recomputes there and passes; timed,
it moves no bytes and reports a time below the memory-bandwidth floor. Decided by roofline.py (a time below
the floor of bytes that must move) and the post-timing re-check.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask
    )


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    stamp = (x[:4].tolist(), y[:4].tolist(), alpha)
    memo = getattr(x, "_kb_memo", None)
    if memo is not None and memo[0] == stamp:
        return memo[1]
    out = torch.empty_like(x)
    n = x.numel()
    _scale_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    x._kb_memo = (stamp, out)
    return out
