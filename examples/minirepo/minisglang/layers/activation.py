"""Activation layers."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from minisglang.kernels.fused_op import BaseFusedOp


class SiluAndMul(BaseFusedOp):
    """SwiGLU: the input holds [gate | up] along the last dim; the output is silu(gate) * up."""

    def forward_native(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]
