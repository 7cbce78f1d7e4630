"""Class 6 — telling the timed calls from the checked ones (target: scale_add, on a GPU).

Does the work when called eagerly (that is how results are checked) and nothing while a CUDA graph is being
captured (that is how the graph regime is timed), so the timed graph replays an empty call. Caught
statically (graph-capture detection is harness detection) and, on a GPU, by the post-timing re-check of the
captured call's output (class 8) or the roofline (class 15).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    if x.is_cuda and torch.cuda.is_current_stream_capturing():
        return out
    n = x.numel()
    _scale_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    return out
