"""Written after LMDeploy's DefaultSiluAndMulImpl.forward (lmdeploy/pytorch/backends/default/activation.py),
whose activation is an nn.SiLU attribute (the extractor cannot turn a module attribute into an input)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """x: [..., 2 * d] holding [gate | up]; returns silu(gate) * up in the dtype of x."""
    gate, up = x.chunk(2, -1)
    return F.silu(gate) * up
