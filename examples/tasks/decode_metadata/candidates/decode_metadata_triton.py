"""Fused decode-metadata refresh: one Triton launch instead of five PyTorch kernels.

Grid: (request, block of pages). Every program gathers one block of its request's page table; the first
block of each request also writes that request's cache_seqlens entry and its cu_seqlens_k prefix sum (a
masked reduction over the requests before it, which is cheap for decode batch sizes and avoids a second
launch).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START


@triton.jit
def _decode_metadata_kernel(
    seq_lens_ptr,
    req_pool_indices_ptr,
    req_to_token_ptr,
    strided_indices_ptr,
    cache_seqlens_ptr,
    cu_seqlens_k_ptr,
    page_table_ptr,
    max_seq_pages,
    seq_len_delta,
    page_size,
    req_to_token_stride,
    page_table_stride,
    BLOCK_BATCH: tl.constexpr,
    BLOCK_PAGES: tl.constexpr,
):
    request = tl.program_id(0)
    page_block = tl.program_id(1)

    if page_block == 0:
        own_len = tl.load(seq_lens_ptr + request).to(tl.int32) + seq_len_delta
        tl.store(cache_seqlens_ptr + request, own_len)
        # cu_seqlens_k[request + 1] = sum of (seq_lens + delta) over requests 0..request, in int32 like
        # torch.cumsum(dtype=int32).
        total = tl.zeros((), dtype=tl.int32)
        for start in range(0, request + 1, BLOCK_BATCH):
            offs = start + tl.arange(0, BLOCK_BATCH)
            keep = offs <= request
            lens = tl.load(seq_lens_ptr + offs, mask=keep, other=0).to(tl.int32)
            total += tl.sum(tl.where(keep, lens + seq_len_delta, 0), axis=0)
        tl.store(cu_seqlens_k_ptr + request + 1, total)

    row = tl.load(req_pool_indices_ptr + request).to(tl.int64)
    pages = page_block * BLOCK_PAGES + tl.arange(0, BLOCK_PAGES)
    in_range = pages < max_seq_pages
    token_pos = tl.load(strided_indices_ptr + pages, mask=in_range, other=0)
    slots = tl.load(req_to_token_ptr + row * req_to_token_stride + token_pos, mask=in_range, other=0)
    tl.store(
        page_table_ptr + request.to(tl.int64) * page_table_stride + pages,
        slots // page_size,
        mask=in_range,
    )


def normal_decode_set_metadata(
    cache_seqlens_int32: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    page_table: torch.Tensor,
    req_to_token: torch.Tensor,
    req_pool_indices: torch.Tensor,
    strided_indices: torch.Tensor,
    max_seq_pages: int,
    seq_lens: torch.Tensor,
    seq_len_delta: int,
    page_size: int,
) -> None:
    batch = seq_lens.shape[0]
    block_pages = min(1024, triton.next_power_of_2(max(int(max_seq_pages), 16)))
    block_batch = min(1024, triton.next_power_of_2(max(batch, 16)))
    grid = (batch, triton.cdiv(int(max_seq_pages), block_pages))
    _decode_metadata_kernel[grid](
        seq_lens,
        req_pool_indices,
        req_to_token,
        strided_indices,
        cache_seqlens_int32,
        cu_seqlens_k,
        page_table,
        max_seq_pages,
        seq_len_delta,
        page_size,
        req_to_token.stride(0),
        page_table.stride(0),
        BLOCK_BATCH=block_batch,
        BLOCK_PAGES=block_pages,
        num_warps=4,
    )


# EVOLVE-BLOCK-END
