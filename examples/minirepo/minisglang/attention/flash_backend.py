"""Decode attention over a paged KV cache, driven by metadata kept in preallocated buffers.

Like a CUDA-graph-friendly backend, the metadata lives in fixed buffers on the backend (`cache_seqlens`,
`cu_seqlens_k`, `page_table`) that a captured graph would read; every decode step rewrites them in place.
"""

from __future__ import annotations

import torch

from ..utils import ceil_div

METADATA_DTYPE = torch.int32


class FlashDecodeBackend:
    def __init__(self, req_to_token: torch.Tensor, page_size: int, max_bs: int) -> None:
        device = req_to_token.device
        max_context_len = req_to_token.shape[1]
        self.req_to_token = req_to_token
        self.page_size = page_size
        self.max_seq_len_k = 0
        self.cache_seqlens = torch.zeros(max_bs, dtype=METADATA_DTYPE, device=device)
        self.cu_seqlens_k = torch.zeros(max_bs + 1, dtype=METADATA_DTYPE, device=device)
        self.page_table = torch.zeros(
            max_bs, ceil_div(max_context_len, page_size), dtype=METADATA_DTYPE, device=device
        )
        # Position of the first token of every page.
        self.strided_indices = torch.arange(0, max_context_len, page_size, device=device)

    @torch.no_grad()
    def init_forward_metadata_replay(
        self,
        bs: int,
        req_pool_indices: torch.Tensor,
        seq_lens: torch.Tensor,
        seq_lens_cpu: torch.Tensor,
        seq_len_delta: int = 0,
    ) -> None:
        """Refresh the metadata buffers for a decode batch of `bs` requests (rows [:bs] of each buffer)."""
        self.max_seq_len_k = int(seq_lens_cpu[:bs].max()) + seq_len_delta
        max_seq_pages = ceil_div(self.max_seq_len_k, self.page_size)
        cache_seqlens = self.cache_seqlens[:bs]
        cache_seqlens.copy_(seq_lens[:bs] + seq_len_delta)
        self.cu_seqlens_k[1 : bs + 1].copy_(torch.cumsum(cache_seqlens, dim=0, dtype=torch.int32))
        first_slots = self.req_to_token[
            req_pool_indices[:bs, None], self.strided_indices[:max_seq_pages][None, :]
        ]
        self.page_table[:bs, :max_seq_pages].copy_(first_slots // self.page_size)

    def forward_decode(
        self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, scale: float
    ) -> torch.Tensor:
        """q: [bs, heads, dim]; k_cache, v_cache: [slots, heads, dim] of one layer. Uses the metadata."""
        out = torch.empty_like(q)
        offsets = torch.arange(self.page_size, device=q.device)
        for b, length in enumerate(self.cache_seqlens[: q.shape[0]].tolist()):
            pages = self.page_table[b, : ceil_div(length, self.page_size)].long()
            slots = (pages[:, None] * self.page_size + offsets).flatten()[:length]
            keys, values = k_cache[slots], v_cache[slots]  # [length, heads, dim]
            probs = torch.einsum("hd,lhd->hl", q[b].float(), keys.float()).mul(scale).softmax(dim=-1)
            out[b] = torch.einsum("hl,lhd->hd", probs, values.float()).to(q.dtype)
        return out
