"""DeepSeek-V3 style expert selection ("noaux_tc": sigmoid scores, bias-corrected, group-limited)."""

from __future__ import annotations

import torch
from torch import nn

from ...utils import ENABLE_TORCH_COMPILE, get_compiler_backend
from .utils import group_limited_mask

# Router constants of DeepSeek-V3 / R1.
NUM_ROUTED_EXPERTS = 256
NUM_EXPERT_GROUP = 8
TOPK_GROUP = 4
TOP_K = 8
ROUTED_SCALING_FACTOR = 2.5
# A group is ranked by the sum of its best few biased scores.
GROUP_SCORE_TOPK = 2


@torch.compile(dynamic=True, backend=get_compiler_backend(), disable=not ENABLE_TORCH_COMPILE)
def biased_grouped_topk(
    gating_output: torch.Tensor,
    correction_bias: torch.Tensor,
    topk: int = TOP_K,
    num_expert_group: int = NUM_EXPERT_GROUP,
    topk_group: int = TOPK_GROUP,
    routed_scaling_factor: float = ROUTED_SCALING_FACTOR,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (weights fp32 [tokens, topk], expert ids int32 [tokens, topk]); ids come in no set order."""
    num_tokens, num_experts = gating_output.shape
    group_size = num_experts // num_expert_group
    scores = gating_output.sigmoid()
    scores_for_choice = scores + correction_bias.unsqueeze(0)
    group_scores = (
        scores_for_choice.view(num_tokens, num_expert_group, group_size)
        .topk(GROUP_SCORE_TOPK, dim=-1)
        .values.sum(dim=-1)
    )
    allowed = group_limited_mask(group_scores, topk_group, group_size)
    candidates = scores_for_choice.masked_fill(~allowed, float("-inf"))
    topk_ids = torch.topk(candidates, k=topk, dim=-1, sorted=False).indices
    topk_weights = scores.gather(1, topk_ids)
    topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True) * routed_scaling_factor
    return topk_weights.to(torch.float32), topk_ids.to(torch.int32)


class TopK(nn.Module):
    """Router head: owns the load-balancing bias and applies the group-limited top-k."""

    def __init__(self, num_experts: int = NUM_ROUTED_EXPERTS, top_k: int = TOP_K) -> None:
        super().__init__()
        self.top_k = top_k
        self.e_score_correction_bias = nn.Parameter(torch.zeros(num_experts), requires_grad=False)

    def forward(self, router_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return biased_grouped_topk(router_logits.float(), self.e_score_correction_bias, topk=self.top_k)
