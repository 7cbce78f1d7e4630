"""Inductor's bookkeeping assignments that nothing reads leave a @triton.jit function; a value read later (in
a later iteration too), a call and a function that is no kernel keep their lines, and the kernel compiles
to the same PTX for sm_90."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
import torch

from kernelbot.integrate.drop_unread_assignments import (
    DropUnreadAssignmentsTransformer,
    dropped_unread_assignments,
)
from tests.kernelbot.integrate.integrate_testing import assert_transform, sm90_ptx

# Inductor's RMSNorm-with-residual kernel as torch.compile wrote it for SGLang's RMSNorm (the seed of
# tests/evolution/data/inductor_capture_sglang_rmsnorm_residual.json, named by
# kernelbot.integrate.inductor_names, its temporaries inlined, its lines wrapped), beside a host that
# assigns a value it never reads.
SOURCE = textwrap.dedent(
    """
    import triton
    import triton.language as tl


    # Fused by Inductor from aten._to_copy, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul
    @triton.jit
    def _rms_norm_kernel(
        x_ptr, residual_ptr, variance_epsilon_ptr, weight_ptr, x_out_ptr, buf2_ptr, HIDDEN: tl.constexpr,
        xnumel, r0_numel: tl.constexpr, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr
    ):
        rnumel = r0_numel
        RBLOCK: tl.constexpr = R0_BLOCK
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        r0_base = tl.arange(0, R0_BLOCK)[None, :]
        rbase = r0_base
        x0 = xindex
        _tmp7 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
        for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
            r0_index = r0_offset + r0_base
            r0_mask = r0_index < r0_numel
            roffset = r0_offset
            rindex = r0_index
            r0_1 = r0_index
            tmp0 = tl.load(
                x_ptr + (r0_1 + HIDDEN * x0), r0_mask & xmask, eviction_policy='evict_last', other=0.0
            ).to(tl.float32)
            tmp2 = tl.load(
                residual_ptr + (r0_1 + HIDDEN * x0), r0_mask & xmask, eviction_policy='evict_last', other=0.0
            ).to(tl.float32)
            tmp4 = tmp0.to(tl.float32) + tmp2.to(tl.float32)
            tmp8 = _tmp7 + tl.broadcast_to(tmp4 * tmp4, [XBLOCK, R0_BLOCK])
            _tmp7 = tl.where(r0_mask & xmask, tmp8, _tmp7)
        tmp7 = tl.sum(_tmp7, 1)[:, None]
        tmp17 = variance_epsilon_ptr
        for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
            r0_index = r0_offset + r0_base
            r0_mask = r0_index < r0_numel
            roffset = r0_offset
            rindex = r0_index
            r0_1 = r0_index
            tmp9 = tl.load(
                x_ptr + (r0_1 + HIDDEN * x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0
            ).to(tl.float32)
            tmp11 = tl.load(
                residual_ptr + (r0_1 + HIDDEN * x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0
            ).to(tl.float32)
            weight = tl.load(
                weight_ptr + r0_1, r0_mask, eviction_policy='evict_last', other=0.0
            ).to(tl.float32)
            tmp13 = tmp9.to(tl.float32) + tmp11.to(tl.float32)
            tmp20 = tl.rsqrt(tmp7 / tl.cast(HIDDEN, tl.float32) + tmp17.to(tl.float32))
            x_out = (tmp13 * tmp20 * weight.to(tl.float32)).to(tl.float32)
            buf2 = tmp13.to(tl.float32)
            tl.store(x_out_ptr + (r0_1 + HIDDEN * x0), x_out, r0_mask & xmask)
            tl.store(buf2_ptr + (r0_1 + HIDDEN * x0), buf2, r0_mask & xmask)


    def host(x):
        tokens = x.shape[0]
        return x
    """
)
BOOKKEEPING = (
    "    rnumel = r0_numel\n",
    "    RBLOCK: tl.constexpr = R0_BLOCK\n",
    "    rbase = r0_base\n",
    "        roffset = r0_offset\n",
    "        rindex = r0_index\n",
)


def test_inductors_bookkeeping_and_nothing_else_goes() -> None:
    dropped = dropped_unread_assignments(cst.parse_module(SOURCE)).code
    expected = SOURCE
    for line in BOOKKEEPING:
        expected = expected.replace(line, "")
    assert dropped == expected
    assert len(dropped.splitlines()) == len(SOURCE.splitlines()) - 7  # roffset and rindex in both loops
    # kept: read later, an alias read later, a value carried to the next iteration, a host's unread value
    for kept in ("r0_base = ", "r0_1 = r0_index", "_tmp7 = tl.where(", "tokens = x.shape[0]"):
        assert kept in dropped


def test_a_call_a_value_read_and_a_block_of_nothing_else_stay() -> None:
    """`tl.load` may fault and `tl.store` writes: a call stays unread. A value read only by one that goes
    goes next; a loop whose body would be empty keeps it; a comment above one that goes stays."""
    assert_transform(
        DropUnreadAssignmentsTransformer({"_probe_kernel"}),
        """
        @triton.jit
        def _probe_kernel(p, q, N: tl.constexpr):
            tmp = tl.load(p)
            offs = tl.arange(0, N)
            # the row's end
            end = offs + N
            last = end[None, :] - 1
            count = 0
            for i in range(4):
                unused = i * 2
            for i in range(4):
                count += i
            tl.store(q + offs, count)
        """,
        """
        @triton.jit
        def _probe_kernel(p, q, N: tl.constexpr):
            tmp = tl.load(p)
            offs = tl.arange(0, N)
            # the row's end
            count = 0
            for i in range(4):
                unused = i * 2
            for i in range(4):
                count += i
            tl.store(q + offs, count)
        """,
    )


def test_a_module_without_kernels_is_unchanged() -> None:
    source = SOURCE.replace("@triton.jit\n", "")
    module = cst.parse_module(source)
    assert dropped_unread_assignments(module) is module


@pytest.mark.skipif(torch.cuda.is_available(), reason="compiled for sm_90 on a machine without a GPU")
def test_the_kernel_compiles_to_the_same_ptx(tmp_path: Path) -> None:
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(SOURCE)
    after.write_text(dropped_unread_assignments(cst.parse_module(SOURCE)).code)
    pointers = ("x_ptr", "residual_ptr", "variance_epsilon_ptr", "weight_ptr", "x_out_ptr", "buf2_ptr")
    signature = {name: "*bf16" for name in pointers} | {"variance_epsilon_ptr": "fp32"}
    signature |= {"HIDDEN": "constexpr", "xnumel": "i32", "r0_numel": "constexpr"}
    signature |= {"XBLOCK": "constexpr", "R0_BLOCK": "constexpr"}
    constants = {6: 4096, 8: 4096, 9: 1, 10: 2048}  # hidden 4096 in two chunks, one row a program
    files = [before, after]
    ptx_before, ptx_after = sm90_ptx(files, "_rms_norm_kernel", signature, constants, tmp_path / "cache")
    assert "rsqrt" in ptx_before  # the kernel was compiled
    assert ptx_after == ptx_before
