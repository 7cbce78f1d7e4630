"""Class 11 — PyTorch compute reached through a computed attribute name (target: scale_add).

`getattr(x, "m" + "ul")` cannot be read statically, and the sum hides behind `.float().contiguous()`
preparation. Caught at run time: the ATen ops the host code dispatched (aten.mul, aten.add) are compute,
whatever name reached them.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _touch(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < 0)


def _method(tensor: torch.Tensor, stem: str):
    return getattr(tensor, stem + ("ul" if stem == "m" else "dd"))


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    scratch = torch.empty(16, device=x.device)
    _touch[(1,)](scratch, BLOCK=16)
    prepared = x.float().contiguous()
    return _method(_method(prepared, "m")(alpha), "a")(y)
