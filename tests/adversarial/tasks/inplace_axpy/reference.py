"""In-place reference: only `y` may change."""

from __future__ import annotations

import torch


def axpy_(y: torch.Tensor, x: torch.Tensor, alpha: float) -> None:
    y.add_(x, alpha=alpha)
