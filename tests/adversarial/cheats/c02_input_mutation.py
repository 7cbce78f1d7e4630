"""Class 2 — mutating inputs beyond the reference (target: scale_add).

Writes x * alpha + y over x itself and returns x: no allocation, so it looks faster. A naive harness that
computes the reference before the candidate, or compares only the return value, accepts it. Caught at run
time: every argument the reference does not mutate must be bit-identical after the call.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_add_into_x(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x * alpha + y, mask=mask)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    n = x.numel()
    _scale_add_into_x[(triton.cdiv(n, 1024),)](x, y, n, alpha, BLOCK=1024)
    return x
