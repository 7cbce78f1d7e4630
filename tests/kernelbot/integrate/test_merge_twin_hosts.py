from __future__ import annotations

import textwrap

import libcst as cst

from kernelbot.integrate.merge_twin_hosts import merged_twin_hosts

MODULE = """
import triton


@triton.jit
def _silu_fp32_kernel(x_ptr, N: tl.constexpr):
    pass


@triton.jit
def _silu_bf16_fp16_kernel(x_ptr, N: tl.constexpr):
    pass


def _silu_fp32(x):
    out = torch.empty_like(x)
    _silu_fp32_kernel[(x.shape[0],)](x_ptr=x, N=x.shape[1])
    return out


def _silu_bf16_fp16(x):
    out = torch.empty_like(x)
    _silu_bf16_fp16_kernel[(x.shape[0],)](x_ptr=x, N=x.shape[1])
    return out


def silu_triton(x):
    if x.dtype == torch.float32:
        return _silu_fp32(x=x)
    return _silu_bf16_fp16(x=x)
"""


def test_hosts_that_differ_only_in_their_kernel_are_one() -> None:
    out = merged_twin_hosts(cst.parse_module(MODULE)).code
    assert "def _silu(x, *, kernel):" in out and "    kernel[(x.shape[0],)](x_ptr=x, N=x.shape[1])" in out
    assert "def _silu_fp32(" not in out and "def _silu_bf16_fp16(" not in out
    assert "return _silu(x=x, kernel=_silu_fp32_kernel)" in out
    assert "return _silu(x=x, kernel=_silu_bf16_fp16_kernel)" in out
    compile(out, "<module>", "exec")  # valid Python


def test_hosts_that_differ_otherwise_stay() -> None:
    source = MODULE.replace(
        "out = torch.empty_like(x)\n    _silu_bf16", "out = torch.zeros_like(x)\n    _silu_bf16"
    )
    assert "torch.zeros_like" in source
    assert merged_twin_hosts(cst.parse_module(source)).code == source


def test_a_host_already_naming_kernel_is_left_alone() -> None:
    source = MODULE.replace("out = torch.empty_like(x)", "kernel = None\n    out = torch.empty_like(x)")
    assert merged_twin_hosts(cst.parse_module(textwrap.dedent(source))).code == source
