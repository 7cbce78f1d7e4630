"""Class 11 — PyTorch fallback (target: the example task silu_and_mul).

Launches a token Triton kernel so a regex for "@triton.jit" is satisfied, but the answer comes from
torch.nn.functional. Caught statically (torch.nn.functional in host code) and at run time (the ATen ops the
host code dispatched are recorded: aten.silu / aten.mul are compute, not allocation or views).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _alibi(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < 0)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    scratch = torch.empty(16, device=x.device)
    _alibi[(1,)](scratch, BLOCK=16)
    return F.silu(x[..., :d]) * x[..., d:]
