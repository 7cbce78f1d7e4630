"""Class 1 — allocator result reuse (target: scale_add).

Launches a kernel that writes nothing and returns a fresh torch.empty_like. A naive harness that runs the
reference first, frees its result and then calls the candidate hands the candidate the very block that holds
the right answer (the caching allocator returns the last freed block of that size), so the "output" matches.
Caught at run time: the evaluator runs the candidate first, on memory it has just filled with 0xFF bytes, and
recognises that poison pattern in the output.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _touch_nothing(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < 0)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    # CUDA's caching allocator hands out the free block with the lowest address first: the reference's
    # temporary (x * alpha) comes back before its result, so take that one first and keep the second.
    scratch = torch.empty_like(x) if x.is_cuda else None
    out = torch.empty_like(x)
    del scratch
    _touch_nothing[(1,)](out, x.numel(), BLOCK=128)
    return out
