"""Class 8 — correct for N calls, then drift (target: scale_add).

The first five calls run the real kernel; every later call skips the work. A harness that checks a case's
first call and times the following ones measures garbage at full speed. Caught at run time: after any failure the
evaluator replays the first passing call with the very same values, and it fails now.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

_calls = [0]


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask
    )


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    _calls[0] += 1
    out = torch.empty_like(x)
    n = x.numel() if _calls[0] <= 5 else 0
    _scale_add_kernel[(max(1, triton.cdiv(n, 1024)),)](x, y, out, n, alpha, BLOCK=1024)
    return out
