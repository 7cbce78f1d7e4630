"""Reference semantics of the `decode_metadata` task.

Provenance: SGLang, python/sglang/srt/layers/attention/flashattention_backend.py, the module-level helper
`normal_decode_set_metadata` (older releases: `normal_decode_set_medadata`), which
`FlashAttentionBackend.init_forward_metadata_replay_cuda_graph` calls before every decode CUDA-graph replay.
Rewritten for kernelbot as a self-contained function; upstream marks it "TODO: fuse these kernels".

Everything is written in place into buffers that the captured graph reads; the function returns None.
"""

from __future__ import annotations

import torch


def normal_decode_set_metadata(
    cache_seqlens_int32: torch.Tensor,  # [bs] int32, overwritten
    cu_seqlens_k: torch.Tensor,  # [bs + 1] int32, [1:] overwritten, [0] stays 0
    page_table: torch.Tensor,  # [bs, pages] int32, [:, :max_seq_pages] overwritten
    req_to_token: torch.Tensor,  # [pool_rows, context_len] int32 KV-cache slot of every token
    req_pool_indices: torch.Tensor,  # [bs] int32 row of req_to_token per request
    strided_indices: torch.Tensor,  # int64 arange(0, context_len, page_size)
    max_seq_pages: int,  # ceil((max(seq_lens) + seq_len_delta) / page_size), known on the host
    seq_lens: torch.Tensor,  # [bs] int32
    seq_len_delta: int,  # 0 for normal decode, draft step + 1 for speculative draft decode
    page_size: int,
) -> None:
    cache_seqlens_int32.copy_(seq_lens + seq_len_delta)
    cu_seqlens_k[1:].copy_(torch.cumsum(cache_seqlens_int32, dim=0, dtype=torch.int32))
    # First token slot of every page the longest request touches, for every request in the batch.
    first_slots = req_to_token[req_pool_indices[:, None], strided_indices[:max_seq_pages][None, :]]
    page_table[:, :max_seq_pages].copy_(first_slots // page_size)
