"""Inputs for the `silu_and_mul` task: the output of a fused gate_up projection.

The gate half is wider-spread than the up half (pre-activation values of trained SwiGLU MLPs reach |x| ~ 10,
where silu is nearly linear on one side and nearly zero on the other), so both tails of silu are exercised.
"""

from __future__ import annotations

import torch

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    tokens = int(case["tokens"])
    d = int(case["d"])
    dtype = _DTYPES[str(case.get("dtype", "bfloat16"))]
    if tokens < 1 or d < 1:
        raise ValueError(f"silu_and_mul: bad case {case}")
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    gate = 2.5 * torch.randn(tokens, d, generator=gen, device=device, dtype=torch.float32)
    up = 1.0 * torch.randn(tokens, d, generator=gen, device=device, dtype=torch.float32)
    x = torch.cat([gate, up], dim=-1).to(dtype)
    return (x,), {}
