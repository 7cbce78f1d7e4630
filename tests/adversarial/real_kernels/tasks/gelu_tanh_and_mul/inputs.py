"""x = [gate | up]: [tokens, 2 * inter], normal values, bf16 (the case's dtype when it names one)."""

from __future__ import annotations

import torch


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    gen = torch.Generator().manual_seed(seed)
    dtype = getattr(torch, case.get("dtype", "bfloat16"))
    x = torch.randn(case["tokens"], 2 * case["inter"], generator=gen).to(dtype)
    return (x.to(device),), {}
