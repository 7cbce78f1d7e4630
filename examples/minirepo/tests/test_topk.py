from __future__ import annotations

import torch

from minisglang.layers.moe.topk import (
    NUM_EXPERT_GROUP,
    NUM_ROUTED_EXPERTS,
    ROUTED_SCALING_FACTOR,
    TOP_K,
    TOPK_GROUP,
    TopK,
    biased_grouped_topk,
)


def route_one_token(logits: list[float], bias: list[float]) -> set[int]:
    """The routing rule spelled out with plain Python lists."""
    scores = [1 / (1 + torch.exp(torch.tensor(-v)).item()) + b for v, b in zip(logits, bias, strict=True)]
    size = NUM_ROUTED_EXPERTS // NUM_EXPERT_GROUP
    groups = [scores[g * size : (g + 1) * size] for g in range(NUM_EXPERT_GROUP)]
    ranked = sorted(range(NUM_EXPERT_GROUP), key=lambda g: -sum(sorted(groups[g])[-2:]))
    allowed = [e for g in ranked[:TOPK_GROUP] for e in range(g * size, (g + 1) * size)]
    return set(sorted(allowed, key=lambda e: -scores[e])[:TOP_K])


def test_matches_the_rule_token_by_token():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(6, NUM_ROUTED_EXPERTS, generator=gen) * 1.5
    bias = torch.randn(NUM_ROUTED_EXPERTS, generator=gen) * 0.05
    weights, ids = biased_grouped_topk(logits, bias)
    assert weights.dtype == torch.float32 and ids.dtype == torch.int32
    for t in range(6):
        assert set(ids[t].tolist()) == route_one_token(logits[t].tolist(), bias.tolist())
        expected = logits[t].sigmoid()[ids[t].long()]
        torch.testing.assert_close(weights[t], expected / expected.sum() * ROUTED_SCALING_FACTOR)


def test_router_module_uses_its_bias():
    router = TopK()
    logits = torch.randn(4, NUM_ROUTED_EXPERTS)
    _, before = router(logits)
    with torch.no_grad():
        router.e_score_correction_bias[:8] = 10.0  # experts 0..7 now win every token
    _, after = router(logits)
    assert not torch.equal(before, after)
    assert all(set(row.tolist()) == set(range(8)) for row in after)
