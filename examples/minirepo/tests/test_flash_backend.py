from __future__ import annotations

import torch

from minisglang.attention.flash_backend import FlashDecodeBackend


def make_backend(page_size: int, max_bs: int = 4, context: int = 64) -> FlashDecodeBackend:
    req_to_token = torch.arange(6 * context, dtype=torch.int32).view(6, context).flip(0).contiguous()
    return FlashDecodeBackend(req_to_token, page_size, max_bs)


def test_metadata_written_in_place():
    backend = make_backend(page_size=4)
    buffers = (backend.cache_seqlens, backend.cu_seqlens_k, backend.page_table)
    addresses = [b.data_ptr() for b in buffers]
    backend.page_table.fill_(-7)
    rows, lens = torch.tensor([5, 0, 2], dtype=torch.int32), torch.tensor([9, 3, 17], dtype=torch.int32)
    backend.init_forward_metadata_replay(3, rows, lens, lens)
    assert [b.data_ptr() for b in buffers] == addresses
    assert backend.cache_seqlens[:3].tolist() == [9, 3, 17]
    assert backend.cu_seqlens_k[:4].tolist() == [0, 9, 12, 29]
    assert backend.max_seq_len_k == 17
    for b, row in enumerate(rows.tolist()):
        for p in range(5):  # ceil(17 / 4) pages
            assert backend.page_table[b, p] == backend.req_to_token[row, 4 * p] // 4
    assert (backend.page_table[:3, 5:] == -7).all() and (backend.page_table[3] == -7).all()


def test_draft_decode_delta_extends_lengths():
    backend = make_backend(page_size=1)
    rows, lens = torch.tensor([1, 3], dtype=torch.int32), torch.tensor([5, 8], dtype=torch.int32)
    backend.init_forward_metadata_replay(2, rows, lens, lens, seq_len_delta=2)
    assert backend.cache_seqlens[:2].tolist() == [7, 10]
    assert backend.cu_seqlens_k[1:3].tolist() == [7, 17]
    assert torch.equal(backend.page_table[1, :10], backend.req_to_token[3, :10])


def test_forward_decode_attends_over_exactly_the_request_tokens():
    backend = make_backend(page_size=2, context=8)
    heads, dim = 2, 4
    k_cache, v_cache = torch.randn(64, heads, dim), torch.randn(64, heads, dim)
    lens = torch.tensor([3, 5], dtype=torch.int32)
    backend.init_forward_metadata_replay(2, torch.tensor([0, 4], dtype=torch.int32), lens, lens)
    q = torch.randn(2, heads, dim)
    out = backend.forward_decode(q, k_cache, v_cache, scale=0.5)
    for b, row in enumerate([0, 4]):
        slots = backend.req_to_token[row, : lens[b]].long()
        probs = torch.einsum("hd,lhd->hl", q[b], k_cache[slots]).mul(0.5).softmax(-1)
        torch.testing.assert_close(out[b], torch.einsum("hl,lhd->hd", probs, v_cache[slots]))
