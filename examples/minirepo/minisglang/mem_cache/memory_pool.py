"""Request-to-token map and a paged KV cache.

Every live request owns one row of `req_to_token`; entry [row, pos] is the KV-cache slot of its token `pos`.
Slots come in pages of `page_size` consecutive slots handed out from a shuffled free list, so a request's
tokens are scattered over the cache the way a long-running server's are. Page 0 is never handed out.
"""

from __future__ import annotations

import torch

from ..utils import ceil_div


class ReqToTokenPool:
    def __init__(self, size: int, max_context_len: int, device: str) -> None:
        self.req_to_token = torch.zeros(size, max_context_len, dtype=torch.int32, device=device)
        self.free_rows = list(range(size))

    def alloc(self) -> int:
        if not self.free_rows:
            raise RuntimeError("ReqToTokenPool is full")
        return self.free_rows.pop()

    def free(self, row: int) -> None:
        self.free_rows.append(row)


class PagedKVPool:
    def __init__(
        self,
        num_pages: int,
        page_size: int,
        num_layers: int,
        num_heads: int,
        head_dim: int,
        device: str,
        dtype: torch.dtype = torch.float32,
        seed: int = 0,
    ) -> None:
        self.page_size = page_size
        shape = (num_layers, num_pages * page_size, num_heads, head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype, device=device)
        self.v_cache = torch.zeros(shape, dtype=dtype, device=device)
        order = torch.randperm(num_pages - 1, generator=torch.Generator().manual_seed(seed)) + 1
        self.free_pages = order.tolist()

    def pages_needed(self, num_tokens: int) -> int:
        return ceil_div(num_tokens, self.page_size)

    def alloc_page(self) -> int:
        if not self.free_pages:
            raise RuntimeError("PagedKVPool is out of pages")
        return self.free_pages.pop()

    def free_page(self, page: int) -> None:
        self.free_pages.append(page)
