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
