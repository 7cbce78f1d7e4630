"""Written after LMDeploy's DefaultGeluAndMulImpl.forward with approximate="tanh" (GeGLU, as Gemma uses it:
lmdeploy/pytorch/backends/default/activation.py), whose activation is an nn.GELU attribute."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def gelu_tanh_and_mul(x: torch.Tensor) -> torch.Tensor:
    """x: [..., 2 * d] holding [gate | up]; returns gelu_tanh(gate) * up in the dtype of x."""
    gate, up = x.chunk(2, -1)
    return F.gelu(gate, approximate="tanh") * up
