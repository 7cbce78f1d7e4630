"""DeepSeek-V3 biased grouped top-k router in one Triton kernel.

Each program routes BLOCK_TOKENS tokens; a token's logits sit in registers as a [groups, experts-per-group]
slice of a [BLOCK_TOKENS, groups, group_size] tile (dimensions padded to powers of two, padding excluded).
Selection works on packed int64 keys, (order-preserving bits of the biased score) << 32 | (reversed expert
slot), so that a single max reduction yields both the best score and its expert, lowest id first on ties. The
kept groups come from a pairwise rank over the few group scores, and each chosen expert's weight is re-read
from its logit, so the kernel needs about a dozen reductions per token block and writes only the top-k pairs.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START

# Batches of at most DECODE_TOKENS tokens are decode-sized: one small program. Larger ones: blocks of
# PREFILL_BLOCK_TOKENS tokens; about 2 tokens per warp keeps a block's [tokens, experts] tile in registers.
DECODE_TOKENS = 16
DECODE_BLOCK_TOKENS = 16
DECODE_WARPS = 4
PREFILL_BLOCK_TOKENS = 32
PREFILL_WARPS = 16

_EXCLUDED_KEY = tl.constexpr(-(2**63))  # below every packed key of a finite score


@triton.jit
def _biased_grouped_topk_kernel(
    gating_ptr,
    bias_ptr,
    topk_weights_ptr,
    topk_ids_ptr,
    tokens,
    gating_row_stride,
    routed_scaling_factor,
    NUM_GROUPS: tl.constexpr,
    GROUP_SIZE: tl.constexpr,
    TOPK_GROUP: tl.constexpr,
    TOPK: tl.constexpr,
    BLOCK_GROUPS: tl.constexpr,
    BLOCK_GROUP_SIZE: tl.constexpr,
    BLOCK_TOPK: tl.constexpr,
    BLOCK_TOKENS: tl.constexpr,
    BLOCK_EXPERTS: tl.constexpr,  # BLOCK_GROUPS * BLOCK_GROUP_SIZE
):
    token = tl.program_id(0) * BLOCK_TOKENS + tl.arange(0, BLOCK_TOKENS)
    token_ok = token < tokens
    token_row = gating_ptr + token.to(tl.int64) * gating_row_stride  # [tokens]
    group = tl.arange(0, BLOCK_GROUPS)[None, :, None]
    member = tl.arange(0, BLOCK_GROUP_SIZE)[None, None, :]
    real_expert = (group < NUM_GROUPS) & (member < GROUP_SIZE)  # [1, groups, group_size]
    expert = group * GROUP_SIZE + member
    slot = group * BLOCK_GROUP_SIZE + member  # position in the padded tile, unique
    load_ok = token_ok[:, None, None] & real_expert

    logits = tl.load(token_row[:, None, None] + expert, mask=load_ok, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + expert, mask=real_expert, other=0.0).to(tl.float32)
    choice = tl.where(real_expert, 1.0 / (1.0 + tl.exp(-logits)) + bias, float("-inf"))
    # float32 bits -> int32 whose signed order is the float order (flip the magnitude bits of negatives).
    bits = choice.to(tl.int32, bitcast=True)
    ordered = tl.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)
    key = (ordered.to(tl.int64) << 32) | (BLOCK_EXPERTS - 1 - slot).to(tl.int64)

    # Group score: the sum of the group's two best biased scores (a tie for first counts twice).
    best_key = tl.max(key, axis=2)  # [tokens, groups]
    best_ordered = (best_key >> 32).to(tl.int32)
    best_slot = BLOCK_EXPERTS - 1 - (best_key - (best_ordered.to(tl.int64) << 32))
    best_bits = tl.where(best_ordered >= 0, best_ordered, best_ordered ^ 0x7FFFFFFF)
    best = best_bits.to(tl.float32, bitcast=True)
    runner_up = tl.max(tl.where(slot == best_slot[:, :, None], float("-inf"), choice), axis=2)
    group_score = best + runner_up

    # Keep the TOPK_GROUP best groups: a group's rank is the number of groups ahead of it (lower index first
    # on ties).
    g = tl.arange(0, BLOCK_GROUPS)
    mine = group_score[:, :, None]
    other = group_score[:, None, :]
    ahead = (other > mine) | ((other == mine) & (g[None, None, :] < g[None, :, None]))
    rank = tl.sum(ahead.to(tl.int32), axis=2)  # [tokens, groups]
    kept = (rank < TOPK_GROUP) & (g[None, :] < NUM_GROUPS)

    candidates = tl.where(kept[:, :, None] & real_expert, key, _EXCLUDED_KEY)
    candidates = tl.reshape(candidates, [BLOCK_TOKENS, BLOCK_EXPERTS])
    flat_slot = tl.arange(0, BLOCK_EXPERTS)[None, :]
    out_slot = tl.arange(0, BLOCK_TOPK)[None, :]
    ids = tl.zeros([BLOCK_TOKENS, BLOCK_TOPK], dtype=tl.int32)
    weights = tl.zeros([BLOCK_TOKENS, BLOCK_TOPK], dtype=tl.float32)
    for k in tl.static_range(TOPK):
        top_key = tl.max(candidates, axis=1)  # [tokens]
        top_slot = BLOCK_EXPERTS - 1 - (top_key - ((top_key >> 32) << 32))  # the low word
        top_expert = (top_slot // BLOCK_GROUP_SIZE) * GROUP_SIZE + top_slot % BLOCK_GROUP_SIZE
        # The weight is the unbiased score of the chosen expert.
        top_logit = tl.load(token_row + top_expert, mask=token_ok, other=0.0).to(tl.float32)
        ids = tl.where(out_slot == k, top_expert.to(tl.int32)[:, None], ids)
        weights = tl.where(out_slot == k, (1.0 / (1.0 + tl.exp(-top_logit)))[:, None], weights)
        candidates = tl.where(flat_slot == top_slot[:, None], _EXCLUDED_KEY, candidates)

    # Padding rows (tokens past the end) sum to 0; give them 1 so they do not divide 0 by 0.
    total = tl.where(token_ok, tl.sum(weights, axis=1), 1.0)
    weights = weights / total[:, None] * routed_scaling_factor
    out = token.to(tl.int64)[:, None] * TOPK + out_slot
    store_ok = token_ok[:, None] & (out_slot < TOPK)
    tl.store(topk_weights_ptr + out, weights, mask=store_ok)
    tl.store(topk_ids_ptr + out, ids, mask=store_ok)


def biased_grouped_topk(
    gating_output: torch.Tensor,
    correction_bias: torch.Tensor,
    topk: int = 8,
    num_expert_group: int = 8,
    topk_group: int = 4,
    routed_scaling_factor: float = 2.5,
) -> tuple[torch.Tensor, torch.Tensor]:
    tokens, num_experts = gating_output.shape
    group_size = num_experts // num_expert_group
    topk_weights = torch.empty((tokens, topk), dtype=torch.float32, device=gating_output.device)
    topk_ids = torch.empty((tokens, topk), dtype=torch.int32, device=gating_output.device)
    if tokens == 0:
        return topk_weights, topk_ids
    # Several tokens per program: fewer, fuller programs for prefill-sized batches (T = 4096 -> 128 programs),
    # a single small program for decode.
    if tokens <= DECODE_TOKENS:
        block_tokens = min(DECODE_BLOCK_TOKENS, triton.next_power_of_2(tokens))
        num_warps = DECODE_WARPS
    else:
        block_tokens = min(PREFILL_BLOCK_TOKENS, triton.next_power_of_2(tokens))
        num_warps = PREFILL_WARPS
    block_groups = triton.next_power_of_2(num_expert_group)
    block_group_size = max(2, triton.next_power_of_2(group_size))
    _biased_grouped_topk_kernel[(triton.cdiv(tokens, block_tokens),)](
        gating_output,
        correction_bias,
        topk_weights,
        topk_ids,
        tokens,
        gating_output.stride(0),
        float(routed_scaling_factor),
        NUM_GROUPS=num_expert_group,
        GROUP_SIZE=group_size,
        TOPK_GROUP=topk_group,
        TOPK=topk,
        BLOCK_GROUPS=block_groups,
        BLOCK_GROUP_SIZE=block_group_size,
        BLOCK_TOPK=triton.next_power_of_2(topk),
        BLOCK_TOKENS=block_tokens,
        BLOCK_EXPERTS=block_groups * block_group_size,
        num_warps=num_warps,
    )
    return topk_weights, topk_ids


# EVOLVE-BLOCK-END
