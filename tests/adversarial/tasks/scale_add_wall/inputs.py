from __future__ import annotations

import torch


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    n = int(case["n"])
    x = torch.randn(n, generator=gen, device=device)
    y = torch.randn(n, generator=gen, device=device)
    alpha = 0.5 + float(torch.rand(1, generator=gen, device=device))
    return (x, y, alpha), {}
