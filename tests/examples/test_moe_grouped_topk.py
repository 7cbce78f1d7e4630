"""moe_grouped_topk: the Triton router picks the reference's experts with the reference's weights."""

from __future__ import annotations

import pytest
import torch

TASK = "moe_grouped_topk"

DEEPSEEK_V3 = {"num_experts": 256, "num_expert_group": 8, "topk_group": 4, "topk": 8}
# Launch branches: a token block with a masked tail, several programs, and router shapes whose groups,
# group size and k are not powers of two (padded tiles).
BRANCH_SHAPES = [
    pytest.param({"tokens": 5, **DEEPSEEK_V3}, id="t5_block_tail"),
    pytest.param({"tokens": 40, **DEEPSEEK_V3}, id="t40_two_programs"),
    pytest.param(
        {"tokens": 9, "num_experts": 160, "num_expert_group": 8, "topk_group": 3, "topk": 6}, id="e160_k6"
    ),
    pytest.param(
        {"tokens": 3, "num_experts": 96, "num_expert_group": 3, "topk_group": 2, "topk": 4}, id="e96_g3"
    ),
    pytest.param(
        {"tokens": 4, "num_experts": 64, "num_expert_group": 1, "topk_group": 1, "topk": 8},
        id="e64_one_group",
    ),
]


def test_candidate_matches_reference_on_task_cases(harness, candidate, small_case, device):
    params = dict(harness.task.case(small_case).params)
    for seed in (0, 1):
        args, kwargs = harness.inputs(params, seed, device)
        verdict = harness.check(candidate, args, kwargs)
        assert verdict.ok, verdict.reason


@pytest.mark.parametrize("params", BRANCH_SHAPES)
def test_candidate_matches_reference_on_branch_shapes(harness, candidate, params, device):
    args, kwargs = harness.inputs(params, seed=7, device=device)
    verdict = harness.check(candidate, args, kwargs)
    assert verdict.ok, verdict.reason


def test_candidate_output_is_a_valid_routing(harness, candidate, device):
    (gating, bias), kwargs = harness.inputs({"tokens": 24, **DEEPSEEK_V3}, seed=2, device=device)
    weights, ids = candidate(gating, bias, **kwargs)
    assert weights.dtype == torch.float32 and ids.dtype == torch.int32
    assert weights.shape == ids.shape == (24, 8)
    assert all(len(set(row.tolist())) == 8 for row in ids)  # eight distinct experts per token
    groups_used = (ids // 32).tolist()
    assert all(len(set(row)) <= 4 for row in groups_used)  # from at most topk_group groups
    torch.testing.assert_close(weights.sum(-1), torch.full((24,), 2.5, device=device), rtol=1e-5, atol=1e-5)


def test_expert_order_within_a_row_does_not_matter(harness, device):
    """task.toml declares the ids unordered; a row-reversed answer with its weights is still correct."""

    def reversed_reference(*args, **kwargs):
        weights, ids = harness.reference(*args, **kwargs)
        return weights.flip(-1), ids.flip(-1)

    args, kwargs = harness.inputs({"tokens": 16, **DEEPSEEK_V3}, seed=1, device=device)
    assert harness.check(reversed_reference, args, kwargs).ok


@pytest.mark.parametrize("mistake", ["ignores_bias", "ignores_groups", "weights_from_biased_scores"])
def test_a_wrong_router_is_not_excused_by_the_mismatch_allowance(harness, mistake, device):
    def wrong_router(gating, bias, topk, num_expert_group, topk_group, routed_scaling_factor):
        if mistake == "ignores_bias":
            bias = torch.zeros_like(bias)
        if mistake == "ignores_groups":
            topk_group = num_expert_group
        config = (topk, num_expert_group, topk_group, routed_scaling_factor)
        weights, ids = harness.reference(gating, bias, *config)
        if mistake == "weights_from_biased_scores":
            biased = gating.sigmoid() + bias
            weights = biased.gather(1, ids.long())
            weights = weights / weights.sum(-1, keepdim=True) * routed_scaling_factor
        return weights, ids

    args, kwargs = harness.inputs({"tokens": 64, **DEEPSEEK_V3}, seed=4, device=device)
    assert not harness.check(wrong_router, args, kwargs).ok
