"""Inductor's numbered temporaries read once are inlined into the kernel's expressions; loads, constants and
values read twice keep their lines, other functions and names are left alone, and the kernel compiles to
the same PTX for sm_90 as Inductor's lines did."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
import torch

from kernelbot.integrate.inline_temporaries import inlined_temporaries
from tests.kernelbot.integrate.integrate_testing import sm90_ptx

# Inductor's SiLU-and-mul kernel as a shipped crossover module held it on the H100 (loads and result already
# named by kernelbot.integrate.inductor_names), beside a host that happens to use a numbered name.
SOURCE = textwrap.dedent(
    """
    import triton
    import triton.language as tl


    # Fused by Inductor from aten.slice, aten.silu, aten.mul
    @triton.jit
    def _silu_and_mul_kernel(
        x_ptr, x_out_ptr, ks0: tl.constexpr, X_SIZE1: tl.constexpr, xnumel, XBLOCK: tl.constexpr
    ):
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:]
        xmask = xindex < xnumel
        x0 = xindex % ks0
        x1 = xindex // ks0
        tmp0 = tl.load(x_ptr + (x0 + X_SIZE1 * x1), xmask, eviction_policy="evict_last").to(tl.float32)
        tmp8 = tl.load(x_ptr + (ks0 + x0 + X_SIZE1 * x1), xmask, eviction_policy="evict_last").to(tl.float32)
        tmp1 = tmp0.to(tl.float32)
        tmp2 = -tmp1
        tmp3 = tl.exp(tmp2)
        tmp4 = tl.full([1], 1.0, tl.float32)
        tmp5 = tmp3 + tmp4
        # tmp5 is the denominator
        tmp6 = tmp1 / tmp5
        tmp7 = tmp6.to(tl.float32)
        x_out = tmp7 * tmp8
        tl.store(x_out_ptr + (x0 + x1 * ks0), x_out, xmask)


    def host(x):
        tmp1 = x.shape[0]
        return tmp1
    """
)


def test_single_use_temporaries_are_inlined_and_the_rest_kept() -> None:
    inlined = inlined_temporaries(cst.parse_module(SOURCE), 110).code
    # tmp1 casts tmp0 to the float32 tmp0 was loaded as: the reads of it read tmp0
    assert "    x_out = (tmp0 / (tl.exp(-tmp0) + tmp4)).to(tl.float32) * tmp8\n" in inlined
    for kept in ("tmp0 = tl.load(", "tmp8 = tl.load(", "tmp4 = tl.full("):
        assert kept in inlined  # memory and constants stay; tmp0 is read twice
    for gone in ("tmp1 = tmp0", "tmp2 =", "tmp3 =", "tmp5 =", "tmp6 =", "tmp7 ="):
        assert gone not in inlined
    assert "# Fused by Inductor from aten.slice, aten.silu, aten.mul\n@triton.jit" in inlined
    assert "# tmp5 is the denominator" in inlined  # a comment is no read: it never receives the value
    assert "def host(x):\n    tmp1 = x.shape[0]\n    return tmp1" in inlined  # not a kernel
    assert len(inlined.splitlines()) == len(SOURCE.splitlines()) - 6
    # Left a copy once drop_noop_casts took its cast away, it goes the same way.
    copied = SOURCE.replace("tmp1 = tmp0.to(tl.float32)", "tmp1 = tmp0")
    assert inlined_temporaries(cst.parse_module(copied), 110).code == inlined


def test_a_cast_to_another_dtype_or_of_a_value_bound_twice_keeps_its_line() -> None:
    """Only a cast to the dtype the value already has is no instruction: a cast to bfloat16 is one, and a
    name bound twice may hold another dtype by the time it is read."""
    narrowed = SOURCE.replace("tmp1 = tmp0.to(tl.float32)", "tmp1 = tmp0.to(tl.bfloat16)")
    assert "tmp1 = tmp0.to(tl.bfloat16)" in inlined_temporaries(cst.parse_module(narrowed), 110).code
    # ... and where it is dropped, only the reads of it change, not an attribute or keyword of its name
    keyword = SOURCE.replace(
        "tl.store(x_out_ptr + (x0 + x1 * ks0), x_out, xmask)",
        "tl.store(x_out_ptr + (x0 + x1 * ks0), x_out, xmask, tmp1=tmp1.tmp1)",
    )
    assert "xmask, tmp1=tmp0.tmp1)" in inlined_temporaries(cst.parse_module(keyword), 200).code
    rebound = SOURCE.replace(
        "    tmp1 = tmp0.to(tl.float32)\n", "    tmp0 = tmp0 * 2\n    tmp1 = tmp0.to(tl.float32)\n"
    )
    assert "tmp1 = tmp0.to(tl.float32)" in inlined_temporaries(cst.parse_module(rebound), 110).code


def test_a_narrow_limit_keeps_the_lines_it_would_overrun() -> None:
    inlined = inlined_temporaries(cst.parse_module(SOURCE), 40).code
    assert "    tmp6 = tmp0 / (tl.exp(-tmp0) + tmp4)\n    x_out = tmp6.to(tl.float32) * tmp8\n" in inlined


def test_a_module_without_numbered_values_is_unchanged() -> None:
    source = SOURCE.replace("tmp", "value")
    module = cst.parse_module(source)
    assert inlined_temporaries(module, 110).code == source


@pytest.mark.skipif(torch.cuda.is_available(), reason="compiled for sm_90 on a machine without a GPU")
def test_the_inlined_kernel_compiles_to_the_same_ptx(tmp_path: Path) -> None:
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(SOURCE)
    after.write_text(inlined_temporaries(cst.parse_module(SOURCE), 110).code)
    signature = {"x_ptr": "*bf16", "x_out_ptr": "*bf16", "ks0": "constexpr", "X_SIZE1": "constexpr"}
    signature |= {"xnumel": "i32", "XBLOCK": "constexpr"}
    constants = {2: 1024, 3: 2048, 5: 1024}
    ptx_before, ptx_after = sm90_ptx(
        [before, after], "_silu_and_mul_kernel", signature, constants, tmp_path / "cache"
    )
    assert "ex2.approx" in ptx_before or "ex2" in ptx_before  # the exp of SiLU was compiled
    assert ptx_after == ptx_before


# SGLang RMSNorm's Inductor kernel as a crossover module held it (named by inductor_names, its unread
# bookkeeping dropped): the epsilon the host passes is aliased before the second loop and read once in it.
RMSNORM = textwrap.dedent(
    """
    import triton
    import triton.language as tl


    @triton.jit
    def _rms_norm_kernel(
        x_ptr, residual_ptr, variance_epsilon, weight_ptr, x_out_ptr, residual_out_ptr, HIDDEN: tl.constexpr,
        xnumel, r0_numel: tl.constexpr, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr,
    ):
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        r0_base = tl.arange(0, R0_BLOCK)[None, :]
        x0 = xindex
        _tmp7 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
        for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
            r0_1 = r0_offset + r0_base
            r0_mask = r0_1 < r0_numel
            tmp0 = tl.load(x_ptr + (r0_1 + HIDDEN * x0), r0_mask & xmask, other=0.0).to(tl.float32)
            tmp2 = tl.load(residual_ptr + (r0_1 + HIDDEN * x0), r0_mask & xmask, other=0.0).to(tl.float32)
            tmp4 = tmp0 + tmp2
            tmp8 = _tmp7 + tl.broadcast_to(tmp4 * tmp4, [XBLOCK, R0_BLOCK])
            _tmp7 = tl.where(r0_mask & xmask, tmp8, _tmp7)
        tmp7 = tl.sum(_tmp7, 1)[:, None]
        tmp17 = variance_epsilon
        for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
            r0_1 = r0_offset + r0_base
            r0_mask = r0_1 < r0_numel
            tmp9 = tl.load(x_ptr + (r0_1 + HIDDEN * x0), r0_mask & xmask, other=0.0).to(tl.float32)
            tmp11 = tl.load(residual_ptr + (r0_1 + HIDDEN * x0), r0_mask & xmask, other=0.0).to(tl.float32)
            weight = tl.load(weight_ptr + r0_1, r0_mask, other=0.0).to(tl.float32)
            tmp13 = tmp9 + tmp11
            tmp16 = tmp7 / tl.cast(HIDDEN, tl.float32)
            tmp18 = tmp17.to(tl.float32)
            tmp19 = tmp16 + tmp18
            tmp20 = tl.rsqrt(tmp19)
            x_out = (tmp13 * tmp20 * weight).to(tl.bfloat16)
            tl.store(x_out_ptr + (r0_1 + HIDDEN * x0), x_out, r0_mask & xmask)
            tl.store(residual_out_ptr + (r0_1 + HIDDEN * x0), tmp13.to(tl.bfloat16), r0_mask & xmask)
    """
)


def test_an_alias_of_a_parameter_is_read_as_the_parameter_inside_a_loop() -> None:
    """`tmp17` is bound before the loop that reads it: no value moves into the loop, the parameter is read
    where the alias was, and the line that reads it is inlined as any other."""
    inlined = inlined_temporaries(cst.parse_module(RMSNORM), 110).code
    assert "tmp17" not in inlined
    assert "        tmp19 = tmp7 / tl.cast(HIDDEN, tl.float32) + variance_epsilon.to(tl.float32)\n" in inlined
    # A parameter the kernel assigns again below the alias holds another value by the time the loop reads
    # the alias, and a value computed from it is one the inlining leaves outside the loop.
    reassigned = RMSNORM.replace(
        "    tmp17 = variance_epsilon\n",
        "    tmp17 = variance_epsilon\n    variance_epsilon = variance_epsilon * 2\n",
    )
    assert reassigned.count("variance_epsilon * 2") == 1
    assert "    tmp17 = variance_epsilon\n" in inlined_temporaries(cst.parse_module(reassigned), 110).code
    # Assigned above it, the alias names the value the parameter holds from there on: it goes.
    above = RMSNORM.replace(
        "    x0 = xindex\n", "    x0 = xindex\n    variance_epsilon = variance_epsilon * 2\n"
    )
    assert "tmp17" not in inlined_temporaries(cst.parse_module(above), 110).code
    local = RMSNORM.replace("tmp17 = variance_epsilon", "tmp17 = variance_epsilon * 2")
    assert "    tmp17 = variance_epsilon * 2\n" in inlined_temporaries(cst.parse_module(local), 110).code
    # A copy of a local computes nothing: the loop reads the local itself.
    copy = RMSNORM.replace("tmp17 = variance_epsilon", "tmp17 = xindex")
    assert "tmp17" not in inlined_temporaries(cst.parse_module(copy), 110).code


@pytest.mark.skipif(torch.cuda.is_available(), reason="compiled for sm_90 on a machine without a GPU")
def test_the_kernel_reading_the_parameter_compiles_to_the_same_ptx(tmp_path: Path) -> None:
    inlined = inlined_temporaries(cst.parse_module(RMSNORM), 110).code
    assert "tmp17" not in inlined
    ptx_before, ptx_after = _rms_norm_ptx(RMSNORM, inlined, tmp_path)
    assert "rsqrt" in ptx_before  # the norm was compiled
    assert ptx_after == ptx_before


def _rms_norm_ptx(before: str, after: str, tmp_path: Path) -> list[str]:
    """The PTX for sm_90 of the RMSNorm kernel in `before` and in `after` (4096 x 4096, chunks of 2048)."""
    files = [tmp_path / "before.py", tmp_path / "after.py"]
    for file, text in zip(files, (before, after), strict=True):
        file.write_text(text)
    signature = {
        name: "*bf16" for name in ("x_ptr", "residual_ptr", "weight_ptr", "x_out_ptr", "residual_out_ptr")
    }
    signature |= {"variance_epsilon": "fp32", "HIDDEN": "constexpr", "xnumel": "i32"}
    signature |= {"r0_numel": "constexpr", "XBLOCK": "constexpr", "R0_BLOCK": "constexpr"}
    constants = {6: 4096, 8: 4096, 9: 1, 10: 2048}
    return sm90_ptx(files, "_rms_norm_kernel", signature, constants, tmp_path / "cache")


# The same kernel as Inductor writes its loops: each renames the loop's index (`r0_1 = r0_index`), the row's
# index is renamed once (`x0 = xindex`), and the sums cast their loads to the float32 they were loaded as.
LOOPS = (
    RMSNORM.replace(
        "        r0_1 = r0_offset + r0_base\n        r0_mask = r0_1 < r0_numel\n",
        "        r0_index = r0_offset + r0_base\n        r0_mask = r0_index < r0_numel\n"
        "        r0_1 = r0_index\n",
    )
    .replace(
        "tmp4 = tmp0 + tmp2",
        "tmp1 = tmp0.to(tl.float32)\n        tmp3 = tmp2.to(tl.float32)\n        tmp4 = tmp1 + tmp3",
    )
    .replace("tmp13 = tmp9 + tmp11", "tmp10 = tmp9.to(tl.float32)\n        tmp13 = tmp10 + tmp11")
)


def test_an_index_renamed_and_a_value_cast_again_in_a_loop_are_read_as_themselves() -> None:
    assert LOOPS.count("r0_1 = r0_index") == 2 and "tmp1 = tmp0.to(tl.float32)" in LOOPS
    inlined = inlined_temporaries(cst.parse_module(LOOPS), 110).code
    for gone in ("r0_1", "x0", "tmp1 ", "tmp3", "tmp10"):
        assert gone not in inlined
    assert "        tmp4 = tmp0 + tmp2\n" in inlined
    assert "        tmp13 = tmp9 + tmp11\n" in inlined
    assert "tl.load(weight_ptr + r0_index, r0_mask, other=0.0)" in inlined
    assert "(r0_index + HIDDEN * xindex)" in inlined


def test_a_copy_read_before_it_or_of_a_value_bound_again_below_it_keeps_its_line() -> None:
    """A read above the copy in a loop reads the previous trip's value; a value bound again below the copy
    no longer holds what the copy holds."""
    earlier = LOOPS.replace(
        "        r0_mask = r0_index < r0_numel\n        r0_1 = r0_index\n        tmp9",
        "        r0_mask = r0_index < r0_numel\n        tmp21 = r0_1\n        r0_1 = r0_index\n        tmp9",
    )
    assert earlier.count("tmp21 = r0_1") == 1
    assert inlined_temporaries(cst.parse_module(earlier), 110).code.count("r0_1 = r0_index") == 2
    rebound = LOOPS.replace(
        "        tmp4 = tmp1 + tmp3", "        tmp0 = tmp0 * 2\n        tmp4 = tmp1 + tmp3"
    )
    assert "tmp1 = tmp0.to(tl.float32)" in inlined_temporaries(cst.parse_module(rebound), 110).code
    moved = LOOPS.replace("    x0 = xindex\n", "    x0 = xindex\n    xindex = xindex + 1\n")
    assert "    x0 = xindex\n" in inlined_temporaries(cst.parse_module(moved), 110).code


@pytest.mark.skipif(torch.cuda.is_available(), reason="compiled for sm_90 on a machine without a GPU")
def test_the_kernel_without_its_copies_compiles_to_the_same_ptx(tmp_path: Path) -> None:
    inlined = inlined_temporaries(cst.parse_module(LOOPS), 110).code
    assert "r0_1" not in inlined
    ptx_before, ptx_after = _rms_norm_ptx(LOOPS, inlined, tmp_path)
    assert "rsqrt" in ptx_before
    assert ptx_after == ptx_before


# The second pass of SGLang RMSNorm's Inductor kernel once its casts to float32 of float32 values are gone:
# the stored residual only copies the sum.
COPIED = textwrap.dedent(
    """
    import triton
    import triton.language as tl


    @triton.jit
    def _rms_norm_kernel(x_ptr, residual_ptr, x_out_ptr, residual_out_ptr, inv_rms, N: tl.constexpr):
        cols = tl.arange(0, N)
        for r0_offset in tl.range(0, 4096, N):
            x = tl.load(x_ptr + r0_offset + cols).to(tl.float32)
            residual = tl.load(residual_ptr + r0_offset + cols).to(tl.float32)
            tmp13 = x + residual
            x_out = tmp13 * inv_rms
            residual_out = tmp13
            tl.store(x_out_ptr + r0_offset + cols, x_out)
            tl.store(residual_out_ptr + r0_offset + cols, residual_out)
    """
)


def test_a_temporary_a_named_value_only_copies_takes_its_name() -> None:
    inlined = inlined_temporaries(cst.parse_module(COPIED), 110).code
    assert "        residual_out = x + residual\n" in inlined
    assert "x_out = residual_out * inv_rms" in inlined and "tmp13" not in inlined
    # Read above the copy (the previous trip's value in a loop), the name is another value: both stay.
    earlier = COPIED.replace("        x_out = tmp13 * inv_rms\n", "        x_out = tmp13 * residual_out\n")
    assert earlier.count("tmp13 * residual_out") == 1
    kept = inlined_temporaries(cst.parse_module(earlier), 110).code
    assert "        residual_out = tmp13\n" in kept
