from __future__ import annotations

import torch


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = torch.randn(int(case["m"]), int(case["k"]), generator=gen, device=device)
    b = torch.randn(int(case["k"]), int(case["n"]), generator=gen, device=device)
    return (a, b), {}
