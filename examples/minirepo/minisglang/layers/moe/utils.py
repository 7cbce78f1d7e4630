"""Shapes shared by the MoE router and the experts."""

from __future__ import annotations

import torch


def group_limited_mask(group_scores: torch.Tensor, topk_group: int, group_size: int) -> torch.Tensor:
    """[tokens, groups] scores -> [tokens, groups * group_size] mask of the experts of the best groups."""
    best_groups = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False).indices
    group_mask = torch.zeros_like(group_scores).scatter_(1, best_groups, 1.0)
    return group_mask.repeat_interleave(group_size, dim=1).bool()
