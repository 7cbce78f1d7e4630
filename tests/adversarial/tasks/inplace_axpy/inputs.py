from __future__ import annotations

import torch


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    n = int(case["n"])
    y = torch.randn(n, generator=gen, device=device)
    x = torch.randn(n, generator=gen, device=device)
    return (y, x, 2.0), {}
