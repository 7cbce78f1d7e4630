"""Degenerate on purpose: every output is ~1e-9, far below float32's atol of 1e-5."""

from __future__ import annotations

import torch


def vanishing_scale(x: torch.Tensor) -> torch.Tensor:
    return x * 1e-9
