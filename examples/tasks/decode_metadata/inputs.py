"""Inputs for the `decode_metadata` task: one decode step of a running server.

The request-to-token table is filled the way a paged KV-cache allocator leaves it: every row is a list of
token slots built from whole pages handed out in random order (a permutation, so no slot is shared), and the
slots past a request's length are stale ones from earlier requests. Page 0 stays reserved for padding.
Output buffers start full of garbage (except cu_seqlens_k[0] = 0, which the engine sets once at capture
time), so anything a kernel forgets to write shows up.
"""

from __future__ import annotations

import math

import torch

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_SHORTEST_REQUEST = 16  # tokens (default min_seq_len): a prompt shorter than this is rare in practice


def _generator(device: str, seed: int) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def _garbage(shape: tuple[int, ...], gen: torch.Generator, device: str) -> torch.Tensor:
    return torch.randint(_INT32_MIN, _INT32_MAX, shape, generator=gen, device=device, dtype=torch.int32)


def make_inputs(case: dict, seed: int, device: str) -> tuple[tuple, dict]:
    batch = int(case["batch"])
    context_len = int(case["context_len"])
    page_size = int(case["page_size"])
    delta = int(case.get("seq_len_delta", 0))
    longest = int(case.get("max_seq_len", context_len - delta))
    shortest = min(int(case.get("min_seq_len", _SHORTEST_REQUEST)), longest)
    if batch < 1 or page_size < 1 or not 1 <= shortest <= longest <= context_len - delta:
        raise ValueError(f"decode_metadata: bad case {case}")
    gen = _generator(device, seed)

    # One req_to_token row per live request plus as many idle rows (finished requests, free slots).
    pool_rows = 2 * batch + 1
    pages_per_row = math.ceil(context_len / page_size)
    pages = 1 + torch.randperm(pool_rows * pages_per_row, generator=gen, device=device)
    offsets = torch.arange(page_size, device=device)
    slots = (pages.view(pool_rows, pages_per_row, 1) * page_size + offsets).view(pool_rows, -1)
    req_to_token = slots[:, :context_len].to(torch.int32).contiguous()

    req_pool_indices = torch.randperm(pool_rows, generator=gen, device=device)[:batch].to(torch.int32)
    # Request lengths: log-uniform between a short prompt and the longest allowed context.
    u = torch.rand(batch, generator=gen, device=device, dtype=torch.float64)
    lengths = torch.exp(math.log(shortest) + u * (math.log(longest) - math.log(shortest)))
    seq_lens = lengths.floor().clamp(shortest, longest).to(torch.int32)

    max_seq_pages = math.ceil((int(seq_lens.max().item()) + delta) / page_size)
    strided_indices = torch.arange(0, context_len, page_size, device=device, dtype=torch.int64)

    cache_seqlens_int32 = _garbage((batch,), gen, device)
    cu_seqlens_k = _garbage((batch + 1,), gen, device)
    cu_seqlens_k[0] = 0
    page_table = _garbage((batch, pages_per_row), gen, device)

    args = (
        cache_seqlens_int32,
        cu_seqlens_k,
        page_table,
        req_to_token,
        req_pool_indices,
        strided_indices,
        max_seq_pages,
        seq_lens,
        delta,
        page_size,
    )
    return args, {}
