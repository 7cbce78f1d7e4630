"""Inputs for the `rmsnorm_residual` task: one decoder layer's residual stream.

The residual stream carries a few "massive activation" channels (magnitudes in the hundreds on a handful of
fixed channels, as observed in Llama- and DeepSeek-class models), which make the fp32 accumulation matter; the
sub-layer output x is O(1); the norm weight is a trained-looking gain around 1 with some small entries.
"""

from __future__ import annotations

import torch

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
_MASSIVE_CHANNELS = 3


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    tokens = int(case["tokens"])
    hidden = int(case["hidden"])
    dtype = _DTYPES[str(case.get("dtype", "bfloat16"))]
    eps = float(case.get("eps", 1e-6))
    if tokens < 1 or hidden < 1:
        raise ValueError(f"rmsnorm_residual: bad case {case}")
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    x = 0.8 * normal(tokens, hidden)
    residual = 2.0 * normal(tokens, hidden)
    channels = torch.randint(0, hidden, (min(_MASSIVE_CHANNELS, hidden),), generator=gen, device=device)
    residual[:, channels] += 150.0 * (1.0 + 0.1 * normal(tokens, channels.numel()))
    weight = (1.0 + 0.3 * normal(hidden)).abs() + 0.02
    return (x.to(dtype), residual.to(dtype), weight.to(dtype)), {"eps": eps}
