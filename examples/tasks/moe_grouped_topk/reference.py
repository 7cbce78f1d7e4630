"""Reference semantics of the `moe_grouped_topk` task (DeepSeek-V3 "noaux_tc" router).

Provenance: SGLang, python/sglang/srt/layers/moe/topk.py, `biased_grouped_topk_impl` (the torch path behind
`select_experts` for DeepSeek-V3/R1 when no fused CUDA gate applies), with renormalize=True, no fused shared
experts and the routed scaling factor applied on the output. Rewritten for kernelbot as a self-contained
function; `hidden_states` (used upstream only for a shape assertion) is dropped.
"""

from __future__ import annotations

import torch


def biased_grouped_topk(
    gating_output: torch.Tensor,  # [tokens, num_experts] fp32 router logits
    correction_bias: torch.Tensor,  # [num_experts] fp32 load-balancing bias (e_score_correction_bias)
    topk: int = 8,
    num_expert_group: int = 8,
    topk_group: int = 4,
    routed_scaling_factor: float = 2.5,
) -> tuple[torch.Tensor, torch.Tensor]:
    tokens, num_experts = gating_output.shape
    scores = gating_output.sigmoid()
    # The bias only steers which experts are chosen; the weights come from the unbiased scores.
    scores_for_choice = scores + correction_bias.unsqueeze(0)
    per_group = scores_for_choice.view(tokens, num_expert_group, num_experts // num_expert_group)
    group_scores = per_group.topk(2, dim=-1).values.sum(dim=-1)  # [tokens, groups]
    kept_groups = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False).indices
    group_mask = torch.zeros_like(group_scores).scatter_(1, kept_groups, 1.0)
    expert_mask = group_mask.repeat_interleave(num_experts // num_expert_group, dim=1)
    candidates = scores_for_choice.masked_fill(expert_mask == 0, float("-inf"))
    topk_ids = torch.topk(candidates, k=topk, dim=-1, sorted=False).indices
    topk_weights = scores.gather(1, topk_ids)
    topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
    topk_weights = topk_weights * routed_scaling_factor
    return topk_weights.to(torch.float32), topk_ids.to(torch.int32)
