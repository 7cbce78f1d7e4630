from __future__ import annotations

import torch


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return (torch.randn(int(case["n"]), generator=gen, device=device),), {}
