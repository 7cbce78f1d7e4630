"""Class 12 — a degenerate task (target: vanishing_scale).

The task's outputs (~1e-9) lie below float32's absolute tolerance, so zeros pass every comparison: this
"kernel" writes zeros without reading its input. The evaluator refuses the task itself: the reference's
answer for one seed passes as the answer for every other seed.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _zeros(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


def vanishing_scale(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _zeros[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
    return out
