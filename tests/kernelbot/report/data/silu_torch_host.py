"""A SiLU-and-mul that computes with PyTorch on the host instead of in its kernel: the static checks stop it
before it runs (the report's failures by stage show it)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    product = torch.nn.functional.silu(x[..., :d]) * x[..., d:]
    out = torch.empty_like(product)
    n = product.numel()
    _copy_kernel[(triton.cdiv(n, 256),)](product, out, n, BLOCK_SIZE=256)
    return out


# EVOLVE-BLOCK-END
