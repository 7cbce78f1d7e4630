"""Normalization layers."""

from __future__ import annotations

import torch
from torch import nn

from minisglang.kernels.fused_op import BaseFusedOp

DEFAULT_RMS_EPS = 1e-6


class RMSNorm(BaseFusedOp):
    def __init__(self, hidden_size: int, eps: float = DEFAULT_RMS_EPS) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward_native(
        self, x: torch.Tensor, residual: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Normalise in fp32. With `residual`, add it first and also return the sum (the new residual)."""
        orig_dtype = x.dtype
        x = x.to(torch.float32)
        if residual is not None:
            x = x + residual.to(torch.float32)
            residual = x.to(orig_dtype)
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        x = (x * self.weight).to(orig_dtype)
        return x if residual is None else (x, residual)
