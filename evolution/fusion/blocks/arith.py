"""Integer division with Python's signs. Triton's `//` and `%` on integers truncate toward zero on the GPU
(the interpreter floors, as numpy does); these give floor semantics under either."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kb_floordiv(a, b):
    """a // b rounded toward minus infinity (torch.floor_divide on integers)."""
    q = a // b
    r = a - q * b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)


@triton.jit
def _kb_pymod(a, b):
    """a % b with the sign of b (torch.remainder on integers)."""
    r = a - (a // b) * b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def _kb_truncdiv(a, b):
    """a / b rounded toward zero (torch.div(..., rounding_mode="trunc") on integers)."""
    q = a // b
    r = a - q * b
    return tl.where((r != 0) & ((r < 0) != (a < 0)), q + 1, q)


@triton.jit
def _kb_round_bf16(x, EMULATE: tl.constexpr):
    """float32 -> the nearest bfloat16 value (ties to even), kept in float32; NaN stays NaN. EMULATE rounds
    with integer operations, which the interpreter (whose own bfloat16 cast truncates) gets right too; on a
    GPU the native conversion rounds the same way in two instructions."""
    if EMULATE:
        bits = x.to(tl.int32, bitcast=True)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
        result = tl.where(x != x, x, rounded.to(tl.float32, bitcast=True))
    else:
        result = x.to(tl.bfloat16).to(tl.float32)
    return result


@triton.jit
def _kb_to_bf16(x, EMULATE: tl.constexpr):
    """float32 -> bfloat16, rounded to nearest (ties to even) under the interpreter too."""
    if EMULATE:  # noqa: SIM108 - a statement-level constexpr branch, the form every Triton accepts
        result = _kb_round_bf16(x, EMULATE).to(tl.bfloat16)
    else:
        result = x.to(tl.bfloat16)
    return result
