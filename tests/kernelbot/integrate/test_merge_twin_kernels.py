"""One @triton.jit function per body in the module that ships: Inductor's code carries one kernel per call
site (the rotary's query and key kernels, one code under two names); the merged module launches the kept
kernel at both sites and computes what the two-kernel module computed (run under Triton's interpreter)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest
import torch

from kernelbot.integrate.merge_twin_kernels import merged_twin_kernels, twin_kernels

SOURCE = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    # Fused by Inductor from aten.mul
    @triton.jit
    def _poi_fused_mul_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
        x0 = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        xmask = x0 < xnumel
        tmp0 = tl.load(in_ptr0 + x0, xmask)
        tl.store(out_ptr0 + x0, tmp0 * 2.0, xmask)


    @triton.jit
    def _poi_fused_add_1(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
        x0 = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        xmask = x0 < xnumel
        tmp0 = tl.load(in_ptr0 + x0, xmask)
        tl.store(out_ptr0 + x0, tmp0 + 1.0, xmask)


    # Fused by Inductor from aten.mul (the key's)
    @triton.jit
    def _poi_fused_mul_2(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
        x0 = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        xmask = x0 < xnumel
        tmp0 = tl.load(in_ptr0 + x0, xmask)
        tl.store(out_ptr0 + x0, tmp0 * 2.0, xmask)


    def entry(query, key):
        q, k = torch.empty_like(query), torch.empty_like(key)
        # _poi_fused_mul_0: the query
        _poi_fused_mul_0[(triton.cdiv(query.numel(), 64),)](query, q, query.numel(), XBLOCK=64)
        # _poi_fused_mul_2: the key, with its own block
        _poi_fused_mul_2[(triton.cdiv(key.numel(), 32),)](key, k, key.numel(), XBLOCK=32)
        _poi_fused_add_1[(triton.cdiv(k.numel(), 32),)](k, k, k.numel(), XBLOCK=32)
        return q, k
    """
)


def test_twins_are_found_by_their_code_not_their_comments_or_names() -> None:
    module = cst.parse_module(SOURCE)
    assert twin_kernels(module) == {"_poi_fused_mul_2": "_poi_fused_mul_0"}
    # A kernel that differs in one constant is no twin.
    assert (
        twin_kernels(
            cst.parse_module(SOURCE.replace("tmp0 * 2.0, xmask)\n\n\ndef", "tmp0 * 3.0, xmask)\n\n\ndef"))
        )
        == {}
    )


def test_the_merged_module_launches_the_kept_kernel_at_both_sites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    merged = merged_twin_kernels(cst.parse_module(SOURCE)).code
    assert "def _poi_fused_mul_2" not in merged and "_poi_fused_mul_2" not in merged
    assert merged.count("@triton.jit") == 2
    assert "_poi_fused_mul_0[(triton.cdiv(key.numel(), 32),)](key, k, key.numel(), XBLOCK=32)" in merged
    assert "# _poi_fused_mul_0: the key, with its own block" in merged
    assert "(the key's)" not in merged  # the dropped kernel's own comment went with it
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    results = []
    for name, text in (("two_kernels", SOURCE), ("merged", merged)):
        (tmp_path / f"{name}.py").write_text(text)
        monkeypatch.syspath_prepend(str(tmp_path))
        module = __import__(name)
        query, key = torch.arange(100, dtype=torch.float32), torch.arange(50, dtype=torch.float32)
        results.append(module.entry(query, key))
        sys.modules.pop(name)
    (q0, k0), (q1, k1) = results
    torch.testing.assert_close(q1, q0)
    torch.testing.assert_close(k1, k0)
    torch.testing.assert_close(k1, torch.arange(50, dtype=torch.float32) * 2 + 1)


def test_comments_that_name_a_twin_a_crossover_suffixed_name_the_kept_kernel() -> None:
    """A crossover suffixes the kernel it runs for small inputs (`..._2_small`) and not the comments the
    seed wrote about it (`K0_XBLOCK = 32  # _poi_fused_mul_2: XBLOCK`): those name the kept kernel too."""
    small = SOURCE.replace("def _poi_fused_mul_2(", "def _poi_fused_mul_2_small(")
    small = small.replace("_poi_fused_mul_2[(", "_poi_fused_mul_2_small[(")
    constant = "K0_XBLOCK = 32  # _poi_fused_mul_2: XBLOCK"
    small = small.replace("\n\n\ndef entry(", f"\n\n\n{constant}\n\n\ndef entry(")
    merged = merged_twin_kernels(cst.parse_module(small)).code
    assert "_poi_fused_mul_2" not in merged
    assert "K0_XBLOCK = 32  # _poi_fused_mul_0: XBLOCK" in merged
    # A seeded name that is a kernel of the module itself is that kernel's, not the twin's.
    kept = small.replace("def _poi_fused_add_1(", "def _poi_fused_mul_2(").replace(
        "_poi_fused_add_1[(", "_poi_fused_mul_2[("
    )
    assert "K0_XBLOCK = 32  # _poi_fused_mul_2: XBLOCK" in merged_twin_kernels(cst.parse_module(kept)).code
