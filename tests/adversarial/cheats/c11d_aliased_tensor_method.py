"""Class 11 — PyTorch compute under an alias (target: scale_add).

Binds torch.Tensor's arithmetic to innocent names and computes the answer on the host, with a token kernel
launch; the inputs pass through `.to(torch.float32)` first, so the compute hides behind a preparation call.
Caught statically (torch.Tensor.mul / .add are compute ops whatever name they are called by) and at run time
(aten.mul / aten.add dispatched from host code; the _to_copy before them is preparation).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

scale = torch.Tensor.mul
combine = torch.Tensor.add


@triton.jit
def _touch(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < 0)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    scratch = torch.empty(16, device=x.device)
    _touch[(1,)](scratch, BLOCK=16)
    return combine(scale(x.to(torch.float32), alpha), y.contiguous())
