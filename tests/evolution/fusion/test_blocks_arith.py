"""Integer division with Python's signs against torch on every sign combination, and the kernels' plain
bfloat16 casts (what the generated kernels write) rounding as torch does on the values where rounding is
delicate (halfway cases, the largest finite, inf, NaN): natively on a GPU, through the interpreter backend's
rounding (evaluators.backends.triton_interpret_rounding, installed by tests/conftest.py) on the CPU."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from evolution.writers.fusion.blocks.arith import _kb_floordiv, _kb_pymod, _kb_truncdiv

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def _division_kernel(a_ptr, b_ptr, floor_ptr, mod_ptr, trunc_ptr, N: tl.constexpr, NP: tl.constexpr):
    lanes = tl.arange(0, NP)
    valid = lanes < N
    a = tl.load(a_ptr + lanes, mask=valid, other=1)
    b = tl.load(b_ptr + lanes, mask=valid, other=1)
    tl.store(floor_ptr + lanes, _kb_floordiv(a, b), mask=valid)
    tl.store(mod_ptr + lanes, _kb_pymod(a, b), mask=valid)
    tl.store(trunc_ptr + lanes, _kb_truncdiv(a, b), mask=valid)


@triton.jit
def _round_kernel(x_ptr, out_ptr, low_ptr, N: tl.constexpr, NP: tl.constexpr):
    lanes = tl.arange(0, NP)
    valid = lanes < N
    x = tl.load(x_ptr + lanes, mask=valid, other=0.0)
    tl.store(out_ptr + lanes, x.to(tl.bfloat16).to(tl.float32), mask=valid)
    tl.store(low_ptr + lanes, x.to(tl.bfloat16), mask=valid)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_integer_division_follows_python(dtype: torch.dtype) -> None:
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (-6, 3), (0, 5), (1, 7), (-1, 7), (123456, -1000)]
    a = torch.tensor([p[0] for p in pairs], dtype=dtype, device=DEVICE)
    b = torch.tensor([p[1] for p in pairs], dtype=dtype, device=DEVICE)
    floor, mod, trunc = (torch.empty_like(a) for _ in range(3))
    _division_kernel[(1,)](a, b, floor, mod, trunc, len(pairs), triton.next_power_of_2(len(pairs)))
    assert floor.tolist() == torch.floor_divide(a, b).tolist()
    assert mod.tolist() == torch.remainder(a, b).tolist()
    assert trunc.tolist() == torch.div(a, b, rounding_mode="trunc").tolist()


def test_bf16_rounding_is_nearest_even() -> None:
    special = [
        1.0 + 2**-8,
        1.0 + 3 * 2**-8,
        -(1.0 + 2**-8),
        172.9844,
        3.3,
        1e-3,
        3.3895e38,
        float("inf"),
        0.0,
    ]
    x = torch.cat([torch.tensor(special), torch.randn(200, generator=torch.Generator().manual_seed(0)) * 50])
    x = x.to(DEVICE)
    out, low = torch.empty_like(x), torch.empty(x.shape, dtype=torch.bfloat16, device=DEVICE)
    _round_kernel[(1,)](x, out, low, x.numel(), triton.next_power_of_2(x.numel()))
    assert torch.equal(out, x.to(torch.bfloat16).float())
    assert torch.equal(low, x.to(torch.bfloat16))
    nan = torch.tensor([float("nan")], device=DEVICE)
    _round_kernel[(1,)](nan, out, low, 1, 1)
    assert torch.isnan(out[0]) and torch.isnan(low[0])
