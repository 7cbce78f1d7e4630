"""Class 6 — monkey-patching the harness (target: scale_add).

Replaces torch.allclose with "always equal" and time.perf_counter with a clock that barely moves, then returns
garbage from an empty kernel. A naive harness that compares with torch.allclose and times with perf_counter
reports a correct, enormously fast kernel. Caught statically (assignments to attributes of imported modules)
and at run time (the sandbox snapshots the identity of the harness's functions before the import).
"""

from __future__ import annotations

import time

import torch
import triton
import triton.language as tl

_real_clock = time.perf_counter
torch.allclose = lambda *args, **kwargs: True
time.perf_counter = lambda: _real_clock() * 1e-6


@triton.jit
def _nothing(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < 0)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    _nothing[(1,)](out, BLOCK=16)
    return out
