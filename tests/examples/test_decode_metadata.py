"""decode_metadata: the Triton candidate writes exactly what the reference writes, and nothing else."""

from __future__ import annotations

import importlib.util

import pytest
import torch

TASK = "decode_metadata"

# Launch branches of the seed candidate: several page blocks with a masked tail (pages > 1024), an odd batch
# (masked prefix-sum block), fewer pages than the minimum block, a page size that is not a power of two.
BRANCH_SHAPES = [
    pytest.param(
        {"batch": 1, "context_len": 3000, "page_size": 1, "min_seq_len": 2500}, id="bs1_multi_page_block"
    ),
    pytest.param({"batch": 37, "context_len": 512, "page_size": 16}, id="bs37_odd_batch"),
    pytest.param({"batch": 2, "context_len": 1024, "page_size": 128}, id="bs2_few_pages"),
    pytest.param({"batch": 5, "context_len": 700, "page_size": 3, "seq_len_delta": 1}, id="bs5_page3_delta1"),
]


def test_candidate_matches_reference_on_task_cases(harness, candidate, small_case, device):
    params = dict(harness.task.case(small_case).params)
    for seed in (0, 1):
        args, kwargs = harness.inputs(params, seed, device)
        verdict = harness.check(candidate, args, kwargs)
        assert verdict.ok, verdict.reason


@pytest.mark.parametrize("params", BRANCH_SHAPES)
def test_candidate_matches_reference_on_branch_shapes(harness, candidate, params, device):
    args, kwargs = harness.inputs(params, seed=3, device=device)
    verdict = harness.check(candidate, args, kwargs)
    assert verdict.ok, verdict.reason


def test_kernel_loops_over_batch_and_pages_with_small_blocks(harness, device):
    """Force the prefix-sum loop and the page-block grid of the seed candidate to take several steps."""
    seed_path = harness.task.root / "candidates" / "decode_metadata_triton.py"
    spec = importlib.util.spec_from_file_location("decode_metadata_seed_candidate", seed_path)
    seed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(seed)
    kernel = seed._decode_metadata_kernel

    def launch_small_blocks(cache, cu, table, r2t, rows, strided, max_pages, lens, delta, page):
        grid = (lens.shape[0], -(-max_pages // 16))
        pointers = (lens, rows, r2t, strided, cache, cu, table)
        scalars = (max_pages, delta, page, r2t.stride(0), table.stride(0))
        kernel[grid](*pointers, *scalars, BLOCK_BATCH=8, BLOCK_PAGES=16)

    args, kwargs = harness.inputs({"batch": 21, "context_len": 640, "page_size": 4}, seed=5, device=device)
    assert args[6] > 16  # several page blocks
    verdict = harness.check(launch_small_blocks, args, kwargs)
    assert verdict.ok, verdict.reason


def test_columns_past_max_seq_pages_keep_their_values(harness, candidate, device):
    args, _ = harness.inputs(
        {"batch": 4, "context_len": 2048, "page_size": 16, "max_seq_len": 900}, 1, device
    )
    page_table, max_seq_pages = args[2], args[6]
    before = page_table.clone()
    candidate(*args)
    assert max_seq_pages < page_table.shape[1]
    assert torch.equal(page_table[:, max_seq_pages:], before[:, max_seq_pages:])
    assert not torch.equal(page_table[:, :max_seq_pages], before[:, :max_seq_pages])


def test_garbage_filled_buffers_expose_a_missing_write(harness, device):
    """A kernel that forgets the prefix sum must fail: the buffers do not start out holding the answer."""

    def without_cumsum(cache, cu, table, r2t, rows, strided, max_pages, lens, delta, page):
        cache.copy_(lens + delta)
        table[:, :max_pages].copy_(r2t[rows[:, None], strided[:max_pages][None, :]] // page)

    args, kwargs = harness.inputs({"batch": 8, "context_len": 1024, "page_size": 16}, seed=0, device=device)
    verdict = harness.check(without_cumsum, args, kwargs)
    assert not verdict.ok
    assert verdict.mismatch is not None and verdict.mismatch.output == "cu_seqlens_k"


def test_writing_beyond_the_reference_is_caught(harness, device):
    """Touching page-table columns the reference leaves alone is a mismatch too."""

    def overwrites_whole_table(cache, cu, table, r2t, rows, strided, max_pages, lens, delta, page):
        cache.copy_(lens + delta)
        cu[1:].copy_(torch.cumsum(cache, 0, dtype=torch.int32))
        table.copy_(r2t[rows[:, None], strided[None, : table.shape[1]]] // page)

    args, kwargs = harness.inputs(
        {"batch": 3, "context_len": 1024, "page_size": 8, "max_seq_len": 300}, 2, device
    )
    verdict = harness.check(overwrites_whole_table, args, kwargs)
    assert not verdict.ok and verdict.mismatch.output == "page_table"
