"""Names from the reference in a module made from torch.compile's code: Inductor's kernels, pointers, buffers
and loads (`_poi_fused_..._0`, `in_ptr0`, `buf3`, `tmp0`) are named for the op and the arguments; what
cannot be told stays; the renamed module computes what Inductor's did (Triton's interpreter)."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest
import torch

from kernelbot.integrate.inductor_names import inductor_names
from kernelbot.integrate.merge_twin_kernels import merged_twin_kernels

# Inductor's form for an in-place op on two arguments (the rotary's query and key, shrunk): per argument a
# kernel that computes into a fresh buffer from the argument and a table read twice, then one that copies
# the buffer back; the two computing kernels are one code under two names.
SOURCE = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl

    K0_XBLOCK = 64  # _poi_fused_add_mul_0: XBLOCK


    # Fused by Inductor from aten.mul, aten.add
    @triton.jit
    def _poi_fused_add_mul_0(in_ptr0, in_ptr1, out_ptr0, ks0, xnumel, XBLOCK: tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        xmask = xindex < xnumel
        x1 = xindex
        x0 = xindex % ks0
        tmp0 = tl.load(in_ptr0 + x1, xmask).to(tl.float32)
        tmp1 = tl.load(in_ptr0 + (x1 + 1), (x0 + 1 < ks0) & xmask, other=0.0).to(tl.float32)
        tmp2 = tl.load(in_ptr1 + x0, xmask)
        tmp3 = tmp0 * tmp2 + tmp1
        tl.store(out_ptr0 + x1, tmp3, xmask)


    @triton.jit
    def _poi_fused_copy_1(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
        x0 = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        xmask = x0 < xnumel
        tmp0 = tl.load(in_ptr0 + x0, xmask)
        tl.store(out_ptr0 + x0, tmp0, xmask)


    @triton.jit
    def _poi_fused_add_mul_2(in_ptr0, in_ptr1, out_ptr0, ks0, xnumel, XBLOCK: tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        xmask = xindex < xnumel
        x1 = xindex
        x0 = xindex % ks0
        tmp0 = tl.load(in_ptr0 + x1, xmask).to(tl.float32)
        tmp1 = tl.load(in_ptr0 + (x1 + 1), (x0 + 1 < ks0) & xmask, other=0.0).to(tl.float32)
        tmp2 = tl.load(in_ptr1 + x0, xmask)
        tmp3 = tmp0 * tmp2 + tmp1
        tl.store(out_ptr0 + x1, tmp3, xmask)


    def entry(query, key, scale):
        buf0 = torch.empty_like(query)
        # _poi_fused_add_mul_0: the query
        _poi_fused_add_mul_0[(triton.cdiv(query.numel(), K0_XBLOCK),)](
            query, scale, buf0, query.shape[-1], query.numel(), XBLOCK=K0_XBLOCK
        )
        _poi_fused_copy_1[(triton.cdiv(query.numel(), 64),)](buf0, query, query.numel(), XBLOCK=64)
        buf2 = torch.empty_like(key)
        _poi_fused_add_mul_2[(triton.cdiv(key.numel(), 32),)](
            key, scale, buf2, key.shape[-1], key.numel(), XBLOCK=32
        )
        _poi_fused_copy_1[(triton.cdiv(key.numel(), 64),)](buf2, key, key.numel(), XBLOCK=64)
        return query, key
    """
)


def _shipped(source: str) -> str:
    return inductor_names(merged_twin_kernels(cst.parse_module(source)), "rotate").code


def test_kernels_pointers_buffers_and_loads_are_named_for_the_op_and_its_arguments() -> None:
    shipped = _shipped(SOURCE)
    assert re.findall(r"\b(?:_poi_fused\w*|(?:in|out)_ptr\d+|buf\d+)", shipped) == []
    # The kernel launched for the query and for the key names both; the one that writes back is a copy.
    assert (
        "def _rotate_kernel(query_or_key_ptr, scale_ptr, query_or_key_out_ptr, ks0, xnumel, XBLOCK" in shipped
    )
    assert "def _copy_kernel(query_or_key_out_ptr, query_or_key_ptr, xnumel, XBLOCK" in shipped
    assert "query_out = torch.empty_like(query)" in shipped and "key_out = torch.empty_like(key)" in shipped
    assert "_copy_kernel[(triton.cdiv(key.numel(), 64),)](key_out, key, key.numel(), XBLOCK=64)" in shipped
    # Loads: the lane's own element and the pointer loaded once are named; the neighbour's stays Inductor's.
    assert "query_or_key = tl.load(query_or_key_ptr + x1, xmask)" in shipped
    assert "scale = tl.load(scale_ptr + x0, xmask)" in shipped
    assert "tmp1 = tl.load(query_or_key_ptr + (x1 + 1)" in shipped
    assert "query_or_key_out = query_or_key * scale + tmp1" in shipped
    assert "tl.store(query_or_key_out_ptr + x1, query_or_key_out, xmask)" in shipped
    # Comments follow the kernels' names.
    assert "K0_XBLOCK = 64  # _rotate_kernel: XBLOCK" in shipped and "# _rotate_kernel: the query" in shipped


def test_a_name_already_taken_stays_as_inductor_wrote_it() -> None:
    taken = SOURCE.replace("def entry(query, key, scale):", "def entry(query, key, scale, scale_ptr=None):")
    taken = taken.replace(
        "buf0 = torch.empty_like(query)", "buf0 = torch.empty_like(query)\n    query_out = 0"
    )
    shipped = _shipped(taken.replace("K0_XBLOCK = 64", "_copy_kernel = None\nK0_XBLOCK = 64"))
    assert "def _poi_fused_copy_1(" in shipped  # the copy's name is the module's already
    assert "buf0 = torch.empty_like(query)" in shipped and "key_out = torch.empty_like(key)" in shipped
    # The kernel's own names decide its pointers: scale_ptr is free inside it, so it is taken.
    assert "def _rotate_kernel(query_or_key_ptr, scale_ptr, " in shipped


def test_a_module_the_fusion_writer_wrote_is_left_as_it_is() -> None:
    source = SOURCE.replace("_poi_fused_add_mul_0", "_rotate_kernel").replace(
        "_poi_fused_add_mul_2", "_rotate_2"
    )
    source = source.replace("_poi_fused_copy_1", "_copy_back")
    module = cst.parse_module(source)
    assert inductor_names(module, "rotate").code == source


def test_the_renamed_module_computes_what_inductors_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    results = []
    for name, text in (("inductor_named", SOURCE), ("reference_named", _shipped(SOURCE))):
        (tmp_path / f"{name}.py").write_text(text)
        monkeypatch.syspath_prepend(str(tmp_path))
        module = __import__(name)
        query = torch.arange(24, dtype=torch.float32).reshape(3, 8)
        key = torch.arange(16, dtype=torch.float32).reshape(2, 8) - 5.0
        results.append(module.entry(query, key, torch.linspace(0.5, 2.0, 8)))
        sys.modules.pop(name)
    (q0, k0), (q1, k1) = results
    torch.testing.assert_close(q1, q0)
    torch.testing.assert_close(k1, k0)
    expected = torch.arange(16, dtype=torch.float32).reshape(2, 8) - 5.0
    rolled = torch.cat([expected[:, 1:], torch.zeros(2, 1)], dim=1)
    torch.testing.assert_close(k1, expected * torch.linspace(0.5, 2.0, 8) + rolled)


def test_each_dtype_specialisation_keeps_its_suffix() -> None:
    specialised = SOURCE.replace("_poi_fused_add_mul_0", "_poi_fused_add_mul_0_fp32").replace(
        "_poi_fused_add_mul_2", "_poi_fused_add_mul_0_bf16"
    )
    # Not twins: the bf16 kernel differs (it casts its result).
    specialised = specialised.replace(
        "tl.store(out_ptr0 + x1, tmp3, xmask)\n\n\ndef entry",
        "tl.store(out_ptr0 + x1, tmp3.to(tl.bfloat16), xmask)\n\n\ndef entry",
    )
    shipped = _shipped(specialised)
    assert "def _rotate_kernel_fp32(query_ptr, scale_ptr, query_out_ptr," in shipped
    assert "def _rotate_kernel_bf16(key_ptr, scale_ptr, key_out_ptr," in shipped


def test_comments_that_name_a_kernel_a_crossover_suffixed_follow_it() -> None:
    """A crossover suffixes the Inductor kernel it keeps for large inputs (`..._0_large`) and not the
    comments the seed wrote about it: those name the kernel the module ships too."""
    large = SOURCE.replace("def _poi_fused_add_mul_0(", "def _poi_fused_add_mul_0_large(").replace(
        "_poi_fused_add_mul_0[(", "_poi_fused_add_mul_0_large[("
    )
    shipped = _shipped(large)
    assert "_poi_fused" not in shipped
    assert "K0_XBLOCK = 64  # _rotate_kernel: XBLOCK" in shipped
    assert "# _rotate_kernel: the query" in shipped


def test_a_size_is_named_for_the_hosts_size_every_launch_passes() -> None:
    """`ks0` is the head size both launches pass as `head_dim`: a constexpr, so `HEAD_DIM` as a hand-written
    kernel spells one; a size Inductor's host computed (`ps0`) keeps Inductor's name."""
    named = SOURCE.replace(
        "def entry(query, key, scale):", "def entry(query, key, scale):\n    head_dim = query.shape[-1]"
    ).replace("query.shape[-1], query.numel()", "head_dim, query.numel()")
    named = named.replace("key.shape[-1], key.numel()", "head_dim, key.numel()")
    constexpr = named.replace("out_ptr0, ks0, xnumel", "out_ptr0, ks0: tl.constexpr, xnumel")
    shipped = _shipped(constexpr)
    assert "query_or_key_out_ptr, HEAD_DIM: tl.constexpr, xnumel" in shipped
    assert "x0 = xindex % HEAD_DIM" in shipped and "(x0 + 1 < HEAD_DIM)" in shipped
    assert "query_or_key_out_ptr, head_dim, xnumel" in _shipped(named)  # a run-time value stays lower case
    computed = named.replace("head_dim = query", "ps0 = query").replace("head_dim,", "ps0,")
    assert "query_or_key_out_ptr, ks0, xnumel" in _shipped(computed)


# Inductor's form for a float the host passes (RMSNorm's epsilon): the kernel's signature names it
# `in_ptr1` like a tensor, but the kernel only reads its value.
SCALAR = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _poi_fused_add_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
        x0 = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        xmask = x0 < xnumel
        tmp0 = tl.load(in_ptr0 + x0, xmask)
        tmp1 = in_ptr1
        tmp2 = tmp0 + tmp1.to(tl.float32)
        tl.store(out_ptr0 + x0, tmp2, xmask)


    def entry(x, eps):
        buf0 = torch.empty_like(x)
        _poi_fused_add_0[(triton.cdiv(x.numel(), 64),)](x, eps, buf0, x.numel(), XBLOCK=64)
        return buf0
    """
)


def test_a_scalar_the_kernel_never_loads_from_is_named_for_the_argument_alone() -> None:
    shipped = _shipped(SCALAR)
    assert "def _rotate_kernel(x_ptr, eps, x_out_ptr, xnumel, XBLOCK" in shipped
    assert "tmp1 = eps\n" in shipped


def test_a_pointer_read_through_an_address_it_makes_keeps_its_suffix() -> None:
    """An address bound to a name first (`p = in_ptr1 + x0`, a block pointer) is still an address."""
    through = SCALAR.replace("tmp1 = in_ptr1", "p = in_ptr1 + x0\n    tmp1 = tl.load(p, xmask)")
    assert "def _rotate_kernel(x_ptr, eps_ptr, x_out_ptr, xnumel, XBLOCK" in _shipped(through)
    atomic = SCALAR.replace("tmp1 = in_ptr1", "tmp1 = tl.atomic_add(in_ptr1 + x0, 1.0, xmask)")
    assert "def _rotate_kernel(x_ptr, eps_ptr, x_out_ptr, xnumel, XBLOCK" in _shipped(atomic)


def test_a_scalar_whose_name_the_kernel_has_keeps_the_pointers_name() -> None:
    taken = SCALAR.replace("xmask = x0 < xnumel", "xmask = x0 < xnumel\n    eps = 0.0")
    assert "def _rotate_kernel(x_ptr, eps_ptr, x_out_ptr, xnumel, XBLOCK" in _shipped(taken)


def test_the_module_with_the_scalar_renamed_computes_what_inductors_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.syspath_prepend(str(tmp_path))
    results = []
    for name, text in (("inductor_scalar", SCALAR), ("reference_scalar", _shipped(SCALAR))):
        (tmp_path / f"{name}.py").write_text(text)
        results.append(__import__(name).entry(torch.arange(8, dtype=torch.float32), 0.5))
        sys.modules.pop(name)
    torch.testing.assert_close(results[1], results[0])
    torch.testing.assert_close(results[1], torch.arange(8, dtype=torch.float32) + 0.5)


# Inductor's form for a norm with a residual (shrunk): one kernel fills two buffers from the same inputs;
# the first is named for the input it is computed from, the second only the host's return tells.
TWO_OUTPUTS = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _poi_fused_add_mul_0(in_ptr0, in_ptr1, out_ptr0, out_ptr1, xnumel, XBLOCK: tl.constexpr):
        x0 = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        xmask = x0 < xnumel
        tmp0 = tl.load(in_ptr0 + x0, xmask)
        tmp1 = tl.load(in_ptr1 + x0, xmask)
        tmp2 = tmp0 + tmp1
        tmp3 = tmp2 * tmp2
        tl.store(out_ptr0 + x0, tmp3, xmask)
        tl.store(out_ptr1 + x0, tmp2, xmask)


    def entry(x, residual):
        buf0 = torch.empty_like(x)
        buf1 = torch.empty_like(x)
        _poi_fused_add_mul_0[(triton.cdiv(x.numel(), 64),)](x, residual, buf0, buf1, x.numel(), XBLOCK=64)
        return (buf0, buf1)
    """
)
# SGLang's RMSNorm.forward_native: `return x` without a residual, `return x, residual` with one.
SGLANG_RETURNS = [("x",), ("x", "residual")]


def _returning(source: str, returns: list[tuple[str | None, ...]]) -> str:
    return inductor_names(merged_twin_kernels(cst.parse_module(source)), "norm", returns).code


def test_a_buffer_the_host_returns_is_named_for_what_the_reference_returns_there() -> None:
    shipped = _returning(TWO_OUTPUTS, SGLANG_RETURNS)
    assert re.findall(r"\bbuf\d+", shipped) == []
    assert "def _norm_kernel(x_ptr, residual_ptr, x_out_ptr, residual_out_ptr, xnumel, XBLOCK" in shipped
    assert "residual_out = torch.empty_like(x)" in shipped and "return (x_out, residual_out)" in shipped
    assert "tl.store(residual_out_ptr + x0, residual_out, xmask)" in shipped
    # A value the reference names and the host does not has that name alone, as the fusion writer's.
    assert "h = torch.empty_like(x)" in _returning(TWO_OUTPUTS, [("x", "h")])


def test_a_returned_buffer_keeps_inductors_name_where_the_reference_does_not_tell() -> None:
    """Without the reference's returns, with a value that is no plain name there, with two returns of as
    many values that disagree, and with both names the host's already."""
    for returns in ([], [("x", None)], [("x", "residual"), ("x", "h")], [("x",)]):
        assert "buf1 = torch.empty_like(x)" in _returning(TWO_OUTPUTS, returns)
    taken = TWO_OUTPUTS.replace("def entry(x, residual):", "def entry(x, residual, residual_out=None):")
    assert "buf1 = torch.empty_like(x)" in _returning(taken, SGLANG_RETURNS)


# Inductor's form for a norm whose row outgrows one chunk (shrunk): a looped reduction reads the row in
# each of its two passes, one load of the same address per loop, each read in its own loop.
TWO_PASSES = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _red_fused_mul_rsqrt_sum_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr,
                                   R0_BLOCK: tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        r0_base = tl.arange(0, R0_BLOCK)[None, :]
        _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
        for r0_offset in range(0, r0_numel, R0_BLOCK):
            r0_index = r0_offset + r0_base
            r0_mask = r0_index < r0_numel
            tmp0 = tl.load(in_ptr0 + (r0_index + r0_numel * xindex), r0_mask & xmask, other=0.0)
            tmp1 = tmp0 * tmp0
            _tmp2 = tl.where(r0_mask & xmask, _tmp2 + tmp1, _tmp2)
        tmp2 = tl.sum(_tmp2, 1)[:, None]
        for r0_offset in range(0, r0_numel, R0_BLOCK):
            r0_index = r0_offset + r0_base
            r0_mask = r0_index < r0_numel
            tmp3 = tl.load(in_ptr0 + (r0_index + r0_numel * xindex), r0_mask & xmask, other=0.0)
            tmp4 = tmp3 * tl.rsqrt(tmp2 / r0_numel + 1e-6)
            tl.store(out_ptr0 + (r0_index + r0_numel * xindex), tmp4, r0_mask & xmask)


    def entry(x):
        buf0 = torch.empty_like(x)
        _red_fused_mul_rsqrt_sum_0[(x.shape[0],)](x, buf0, x.shape[0], x.shape[1], XBLOCK=1, R0_BLOCK=4)
        return buf0
    """
)


def test_a_pointer_loaded_once_in_each_pass_names_each_load() -> None:
    shipped = _returning(TWO_PASSES, [("x",)])
    assert shipped.count("        x = tl.load(x_ptr + (r0_index + r0_numel * xindex)") == 2
    assert "tmp1 = x * x" in shipped and "x_out = x * tl.rsqrt(" in shipped
    assert re.findall(r"\btmp[03]\b", shipped) == []


def test_a_pass_load_read_outside_its_loop_or_of_another_address_keeps_its_name() -> None:
    """The first pass's value read after its loop would be the second's by then; a load of another
    element is another value."""
    outside = TWO_PASSES.replace(
        "tmp2 = tl.sum(_tmp2, 1)[:, None]", "tmp2 = tl.sum(_tmp2, 1)[:, None] + tmp0"
    )
    assert outside.count("+ tmp0") == 1
    assert "tmp0 = tl.load(" in _returning(outside, [("x",)])
    shifted = TWO_PASSES.replace(
        "tmp3 = tl.load(in_ptr0 + (r0_index ", "tmp3 = tl.load(in_ptr0 + (1 + r0_index "
    )
    assert shifted.count("1 + r0_index") == 1
    kept = _returning(shifted, [("x",)])
    assert "tmp0 = tl.load(" in kept and "tmp3 = tl.load(" in kept


def test_the_module_with_each_pass_load_named_computes_what_inductors_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.syspath_prepend(str(tmp_path))
    x = torch.arange(24, dtype=torch.float32).reshape(2, 12) / 7
    results = []
    for name, text in (
        ("inductor_passes", TWO_PASSES),
        ("reference_passes", _returning(TWO_PASSES, [("x",)])),
    ):
        (tmp_path / f"{name}.py").write_text(text)
        results.append(__import__(name).entry(x))
        sys.modules.pop(name)
    torch.testing.assert_close(results[1], results[0])
    torch.testing.assert_close(results[1], x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) / 12 + 1e-6))


def test_a_norms_sum_of_squares_and_its_reciprocal_root_are_named_as_the_fusion_writer_names_them() -> None:
    shipped = _returning(TWO_PASSES, [("x",)])
    assert "    _sum_sq = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)\n" in shipped
    assert "_sum_sq = tl.where(r0_mask & xmask, _sum_sq + tmp1, _sum_sq)" in shipped
    assert "    sum_sq = tl.sum(_sum_sq, 1)[:, None]\n" in shipped
    assert "x_out = x * tl.rsqrt(sum_sq / r0_numel + 1e-6)" in shipped
    root = TWO_PASSES.replace(
        "tmp4 = tmp3 * tl.rsqrt(tmp2 / r0_numel + 1e-6)",
        "tmp5 = tl.rsqrt(tmp2 / r0_numel + 1e-6)\n        tmp4 = tmp3 * tmp5",
    )
    assert root.count("tmp5") == 2
    assert "inv_rms = tl.rsqrt(sum_sq / r0_numel + 1e-6)" in _returning(root, [("x",)])
    # A sum of products of two values is no sum of squares; a root of something else is no inv_rms.
    product = TWO_PASSES.replace("tmp1 = tmp0 * tmp0", "tmp1 = tmp0 * r0_index")
    assert product.count("tmp0 * r0_index") == 1
    plain = _returning(product, [("x",)])
    assert "sum_sq" not in plain and "tmp2 = tl.sum(_tmp2, 1)" in plain
    other_root = root.replace("tl.rsqrt(tmp2 / r0_numel", "tl.rsqrt(tmp3 / r0_numel")
    assert "inv_rms" not in _returning(other_root, [("x",)])
