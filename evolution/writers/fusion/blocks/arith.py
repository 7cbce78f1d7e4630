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
