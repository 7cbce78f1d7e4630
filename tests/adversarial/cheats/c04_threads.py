"""Class 4 — threads (target: scale_add).

Hands the launch to a worker thread. On a GPU the launch cost leaves the timed thread, and a harness that
only watches the calling thread's time under-counts it. Caught statically (concurrent.futures) and at run time
(the sandbox wraps the thread-start primitives).
"""

from __future__ import annotations

import concurrent.futures

import torch
import triton
import triton.language as tl

_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1)


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask
    )


def _launch(x, y, out, alpha):
    n = x.numel()
    _scale_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    _POOL.submit(_launch, x, y, out, alpha).result()
    return out
