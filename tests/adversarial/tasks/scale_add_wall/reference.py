"""Reference of the adversarial suite's main target: a scaled vector add."""

from __future__ import annotations

import torch


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha + y
