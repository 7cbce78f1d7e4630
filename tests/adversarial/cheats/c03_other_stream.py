"""Class 3 — work on another stream (target: scale_add).

On a GPU the kernel is launched on a private side stream and the function returns at once: a harness that
times with events on the current stream measures an empty interval, and a later synchronize() still makes the
result visible for the comparison. Caught statically (torch.cuda.Stream) and, on CUDA, at run time by the
profiler (a kernel on a stream other than the harness's). On CPU the stream branch never runs.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

_SIDE_STREAMS = {}


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask
    )


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    if x.is_cuda:
        side = _SIDE_STREAMS.setdefault(x.device, torch.cuda.Stream(device=x.device))
        with torch.cuda.stream(side):
            _scale_add_kernel[grid](x, y, out, n, alpha, BLOCK=1024)
    else:
        _scale_add_kernel[grid](x, y, out, n, alpha, BLOCK=1024)
    return out
