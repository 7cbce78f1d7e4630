"""Casts in a kernel to the dtype the code already gives a value go (Inductor casts each float32 result to
float32 again before it stores it); a cast of a load, a parameter, a narrower float or anything the code
does not type stays; the kernel compiles to the same PTX for sm_90."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
import torch

from kernelbot.integrate.drop_noop_casts import dropped_noop_casts
from tests.kernelbot.integrate.integrate_testing import sm90_ptx

# SGLang RMSNorm's second pass as Inductor writes it once kernelbot named its values: the product and the
# sum it stores are float32 already, cast to float32 again before each store.
SOURCE = textwrap.dedent(
    """
    import triton
    import triton.language as tl


    @triton.jit
    def _rms_norm_kernel(
        x_ptr, residual_ptr, weight_ptr, eps, x_out_ptr, residual_out_ptr, R0_BLOCK: tl.constexpr
    ):
        row = tl.program_id(0)
        cols = tl.arange(0, R0_BLOCK)
        _sum_sq = tl.full([R0_BLOCK], 0, tl.float32)
        x = tl.load(x_ptr + row * R0_BLOCK + cols).to(tl.float32)
        residual = tl.load(residual_ptr + row * R0_BLOCK + cols).to(tl.float32)
        tmp4 = x + residual
        _sum_sq = tl.where(cols < R0_BLOCK, _sum_sq + tmp4 * tmp4, _sum_sq)
        sum_sq = tl.sum(_sum_sq, 0)
        inv_rms = tl.rsqrt(sum_sq / R0_BLOCK + eps.to(tl.float32))
        weight = tl.load(weight_ptr + cols)
        x_out = (tmp4 * inv_rms * weight.to(tl.float32)).to(tl.float32)
        residual_out = tmp4.to(tl.float32)
        tl.store(x_out_ptr + row * R0_BLOCK + cols, x_out.to(tl.bfloat16))
        tl.store(residual_out_ptr + row * R0_BLOCK + cols, residual_out.to(tl.bfloat16))
        tl.store(residual_out_ptr + row * R0_BLOCK + cols, (-sum_sq * 2.0).to(tl.float32))


    def host(x):
        return x.to(torch.float32)
    """
)


def test_casts_to_the_dtype_a_value_has_go_and_others_stay() -> None:
    dropped = dropped_noop_casts(cst.parse_module(SOURCE)).code
    assert "\n    x_out = tmp4 * inv_rms * weight.to(tl.float32)\n" in dropped
    assert "\n    residual_out = tmp4\n" in dropped
    assert "cols, -sum_sq * 2.0)" in dropped  # the accumulator's sum is float32 too, and ( ) go with the cast
    for kept in (
        "tl.load(x_ptr + row * R0_BLOCK + cols).to(tl.float32)",  # a load's dtype is the pointer's
        "eps.to(tl.float32)",  # a parameter's is the caller's
        "weight.to(tl.float32)",
        "x_out.to(tl.bfloat16)",  # a real conversion
        "return x.to(torch.float32)",  # not a kernel
    ):
        assert kept in dropped


def test_a_name_one_of_whose_lines_gives_another_dtype_keeps_its_casts() -> None:
    """An accumulator whose update is a bfloat16 value is no float32 value, whatever its zeros are."""
    narrow = SOURCE.replace("_sum_sq + tmp4 * tmp4", "(_sum_sq + tmp4 * tmp4).to(tl.bfloat16)")
    assert narrow.count("to(tl.bfloat16), _sum_sq)") == 1
    dropped = dropped_noop_casts(cst.parse_module(narrow)).code
    assert "(-sum_sq * 2.0).to(tl.float32)" in dropped
    assert "residual_out = tmp4\n" in dropped  # the sum's own dtype does not depend on it
    bf16 = SOURCE.replace(
        "residual = tl.load(residual_ptr + row * R0_BLOCK + cols).to(tl.float32)",
        "residual = tl.load(residual_ptr + row * R0_BLOCK + cols).to(tl.bfloat16)",
    )
    assert "residual_out = tmp4.to(tl.float32)\n" in dropped_noop_casts(cst.parse_module(bf16)).code


@pytest.mark.skipif(torch.cuda.is_available(), reason="compiled for sm_90 on a machine without a GPU")
def test_the_kernel_without_its_noop_casts_compiles_to_the_same_ptx(tmp_path: Path) -> None:
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(SOURCE)
    after.write_text(dropped_noop_casts(cst.parse_module(SOURCE)).code)
    assert after.read_text() != SOURCE
    signature = {
        name: "*bf16" for name in ("x_ptr", "residual_ptr", "weight_ptr", "x_out_ptr", "residual_out_ptr")
    }
    signature |= {"eps": "fp32", "R0_BLOCK": "constexpr"}
    ptx_before, ptx_after = sm90_ptx(
        [before, after], "_rms_norm_kernel", signature, {6: 1024}, tmp_path / "c"
    )
    assert "rsqrt" in ptx_before
    assert ptx_after == ptx_before
