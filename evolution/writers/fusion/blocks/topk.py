"""Top-k of every row of a register tile x [R, N] (float32), lanes where `valid` is false excluded. Each
returns (values, indices) as [R, KP] tiles (KP: a power of two >= K), largest first, equal values by smaller
index (torch.topk's order on distinct values); lanes K..KP-1 are filler. Four ways to find them:

- _kb_topk_rows: K rounds of one int64 max over packed keys, the winner masked out of the candidates;
- _kb_topk_rows_threshold: the same rounds without rewriting the candidates, each taking the best key below
  the previous winner (the candidate tile stays read-only);
- _kb_topk_rows_twopass: per round a float max and then the smallest index holding it (no 64-bit keys);
- _kb_topk_rows_bitonic: Triton's own bitonic top-k (`tl.topk`, Triton 3.4 and later) over packed keys: log N
  rounds of compare-exchange instead of K reductions.
"""

from __future__ import annotations

import triton
import triton.language as tl

from evolution.writers.fusion.blocks.keys import _kb_pack


@triton.jit
def _kb_topk_rows(x, valid, K: tl.constexpr, KP: tl.constexpr):
    """K rounds of an int64 max over value-and-index keys, each winner masked out."""
    lanes = tl.arange(0, x.shape[1])[None, :]
    keys = tl.where(valid, _kb_pack(x, lanes), -9223372036854775807)
    slot = tl.arange(0, KP)[None, :]
    picked = tl.full([x.shape[0], KP], -9223372036854775807, tl.int64)
    for j in tl.static_range(K):
        best = tl.max(keys, axis=1)[:, None]
        keys = tl.where(keys == best, -9223372036854775807, keys)
        picked = tl.where(slot == j, best, picked)
    high = (picked >> 32).to(tl.int32)
    value = (high ^ ((high >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)
    return value, 2147483647 - (picked & 2147483647).to(tl.int32)


@triton.jit
def _kb_topk_rows_threshold(x, valid, K: tl.constexpr, KP: tl.constexpr):
    """K rounds of one int64 max, each over the keys below the last winner: the candidates stay read-only
    (no tile rewritten per round)."""
    lanes = tl.arange(0, x.shape[1])[None, :]
    keys = tl.where(valid, _kb_pack(x, lanes), -9223372036854775807)
    slot = tl.arange(0, KP)[None, :]
    picked = tl.full([x.shape[0], KP], -9223372036854775807, tl.int64)
    below = tl.full([x.shape[0], 1], 9223372036854775807, tl.int64)
    for j in tl.static_range(K):
        below = tl.max(tl.where(keys < below, keys, -9223372036854775807), axis=1)[:, None]
        picked = tl.where(slot == j, below, picked)
    high = (picked >> 32).to(tl.int32)
    value = (high ^ ((high >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)
    return value, 2147483647 - (picked & 2147483647).to(tl.int32)


@triton.jit
def _kb_topk_rows_twopass(x, valid, K: tl.constexpr, KP: tl.constexpr):
    """K rounds of a float max, then the smallest index holding it: no 64-bit keys."""
    lanes = tl.arange(0, x.shape[1])[None, :]
    open_ = valid & (lanes >= 0)
    values = tl.where(open_, x, float("-inf"))
    slot = tl.arange(0, KP)[None, :]
    out_values = tl.full([x.shape[0], KP], float("-inf"), tl.float32)
    out_index = tl.zeros([x.shape[0], KP], tl.int32)
    for j in tl.static_range(K):
        best = tl.max(values, axis=1)[:, None]
        where = tl.min(tl.where(open_ & (values == best), lanes, x.shape[1]), axis=1)[:, None]
        taken = lanes == where
        open_ = open_ & (taken == 0)
        values = tl.where(taken, float("-inf"), values)
        out_values = tl.where(slot == j, best, out_values)
        out_index = tl.where(slot == j, where, out_index)
    return out_values, out_index


@triton.jit
def _kb_topk_rows_bitonic(x, valid, K: tl.constexpr, KP: tl.constexpr):
    """Triton's bitonic top-k over value-and-index keys: log N rounds of compare-exchange instead of K
    reductions, for a large K."""
    keys = tl.where(valid, _kb_pack(x, tl.arange(0, x.shape[1])[None, :]), -9223372036854775807)
    # One winner is one max: tl.topk before Triton 3.9 cannot take the top 1 of a single row.
    keys = tl.max(keys, axis=1, keep_dims=True) if KP == 1 else tl.topk(keys, KP)
    high = (keys >> 32).to(tl.int32)
    value = (high ^ ((high >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)
    return value, 2147483647 - (keys & 2147483647).to(tl.int32)
