"""Class 7 — caching outputs across calls (target: scale_add).

Computes once per input buffer (keyed by data pointers) and afterwards returns the stored result. A harness
that checks the first call and then times repeated calls on the same buffers sees the speed of a dict
lookup. Caught at run time: repeated calls refill the SAME buffers with fresh values, and the answer to the
previous values comes back; statically: a module-level container written from a call.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

_RESULTS = {}


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask
    )


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    key = (x.data_ptr(), y.data_ptr(), x.numel())
    cached = _RESULTS.get(key)
    if cached is not None:
        return cached
    out = torch.empty_like(x)
    n = x.numel()
    _scale_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    _RESULTS[key] = out
    return out
