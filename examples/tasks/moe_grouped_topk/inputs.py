"""Inputs for the `moe_grouped_topk` task: fp32 router logits of a DeepSeek-V3 MoE layer.

Logits are a per-token signal plus a per-expert popularity offset (some experts are favoured across tokens,
as in a trained router); the correction bias leans against that popularity, which is what the auxiliary-loss-
free load balancing of DeepSeek-V3 learns, plus noise. The bias is large enough to change the choice on many
tokens, so a router that ignores it fails.
"""

from __future__ import annotations

import torch

_LOGIT_STD = 1.2  # spread of per-token router logits
_POPULARITY_STD = 0.6  # spread of per-expert offsets shared by all tokens


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    tokens = int(case["tokens"])
    num_experts = int(case.get("num_experts", 256))
    if tokens < 1 or num_experts < 1:
        raise ValueError(f"moe_grouped_topk: bad case {case}")
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)

    def normal(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    popularity = _POPULARITY_STD * normal(num_experts)
    gating_output = _LOGIT_STD * normal(tokens, num_experts) + popularity
    correction_bias = -0.08 * popularity + 0.02 * normal(num_experts)

    kwargs = {
        "topk": int(case.get("topk", 8)),
        "num_expert_group": int(case.get("num_expert_group", 8)),
        "topk_group": int(case.get("topk_group", 4)),
        "routed_scaling_factor": float(case.get("routed_scaling_factor", 2.5)),
    }
    return (gating_output, correction_bias), kwargs
