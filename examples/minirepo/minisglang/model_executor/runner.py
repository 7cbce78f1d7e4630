"""Batched greedy decoding: prompts are fed one token per step, then generated tokens are fed back."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..attention.flash_backend import FlashDecodeBackend
from ..mem_cache.memory_pool import PagedKVPool, ReqToTokenPool
from ..utils import ceil_div
from .model import TinyModel


@dataclass
class Request:
    prompt: list[int]
    row: int
    output: list[int] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    seq_len: int = 0  # tokens whose KV is in the cache, including the one being decoded

    def next_input(self) -> int:
        return self.prompt[self.seq_len] if self.seq_len < len(self.prompt) else self.output[-1]


class DecodeRunner:
    def __init__(self, model: TinyModel, max_bs: int, max_context_len: int, page_size: int, seed: int = 0):
        cfg = model.config
        device = str(next(model.parameters()).device)
        self.model, self.page_size, self.device = model, page_size, device
        self.req_pool = ReqToTokenPool(2 * max_bs, max_context_len, device)
        num_pages = 2 * max_bs * ceil_div(max_context_len, page_size) + 1
        kv_shape = (cfg.num_layers, cfg.num_heads, cfg.head_dim)
        self.kv = PagedKVPool(num_pages, page_size, *kv_shape, device, seed=seed)
        self.backend = FlashDecodeBackend(self.req_pool.req_to_token, page_size, max_bs)

    def _place_next_token(self, req: Request) -> int:
        """Give the request's next token a KV slot (a new page when it crosses a page boundary)."""
        pos = req.seq_len
        if pos % self.page_size == 0:
            req.pages.append(self.kv.alloc_page())
        slot = req.pages[-1] * self.page_size + pos % self.page_size
        self.req_pool.req_to_token[req.row, pos] = slot
        req.seq_len += 1
        return slot

    @torch.no_grad()
    def step(self, reqs: list[Request]) -> None:
        input_ids = torch.tensor([r.next_input() for r in reqs], device=self.device)
        out_cache_loc = torch.tensor([self._place_next_token(r) for r in reqs], device=self.device)
        seq_lens_cpu = torch.tensor([r.seq_len for r in reqs], dtype=torch.int32)
        req_pool_indices = torch.tensor([r.row for r in reqs], dtype=torch.int32, device=self.device)
        self.backend.init_forward_metadata_replay(
            len(reqs), req_pool_indices, seq_lens_cpu.to(self.device), seq_lens_cpu
        )
        next_ids = self.model(input_ids, out_cache_loc, self.kv, self.backend).argmax(dim=-1).tolist()
        for req, token in zip(reqs, next_ids, strict=True):
            if req.seq_len >= len(req.prompt):
                req.output.append(token)

    def generate(self, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        reqs = [Request(prompt=list(p), row=self.req_pool.alloc()) for p in prompts]
        while any(len(r.output) < max_new_tokens for r in reqs):
            self.step([r for r in reqs if len(r.output) < max_new_tokens])
        for req in reqs:
            self.req_pool.free(req.row)
            for page in req.pages:
                self.kv.free_page(page)
        return [r.output for r in reqs]
