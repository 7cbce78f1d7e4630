"""Plain Triton stand-ins for the `libdevice` functions Inductor's kernels call that `tl` does not provide
(tanh, isnan, round half to even, log1p, pow, fmod...), and the set of those that `tl` does provide, which
the conversion maps to `tl` directly. On the Triton interpreter only `tl` and `tl.math` are patched, so a
standalone candidate cannot call libdevice; each entry here is (source, dependencies) in the format of
evolution.writers.inductor.helpers, which merges them with its `triton_helpers` stand-ins.
"""

from __future__ import annotations

# libdevice / tl_math functions with a direct `tl` equivalent.
TL_EQUIVALENTS = frozenset(
    {
        "exp",
        "exp2",
        "log",
        "log2",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "erf",
        "floor",
        "ceil",
        "abs",
        "fma",
        "sigmoid",
    }
)

LIBDEVICE_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "tanh": (
        """
@triton.jit
def _tanh(x):
    # tanh(x) = sign(x) * (1 - e) / (1 + e) with e = exp(-2|x|): no overflow for large |x|.
    xf = x.to(tl.float32)
    e = tl.exp(-2.0 * tl.abs(xf))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(xf < 0, -t, t).to(x.dtype)
""",
        (),
    ),
    "isnan": (
        """
@triton.jit
def _isnan(x):
    return x != x
""",
        (),
    ),
    "isinf": (
        """
@triton.jit
def _isinf(x):
    return tl.abs(x) == float("inf")
""",
        (),
    ),
    "trunc": (
        """
@triton.jit
def _trunc(x):
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))
""",
        (),
    ),
    "nearbyint": (
        """
@triton.jit
def _nearbyint(x):
    # Round half to even, as torch.round does.
    down = tl.floor(x)
    frac = x - down
    half_up = (frac > 0.5) | ((frac == 0.5) & ((down % 2) != 0))
    return tl.where(half_up, down + 1.0, down)
""",
        (),
    ),
    "log1p": (
        """
@triton.jit
def _log1p(x):
    # log(1 + x) corrected for the rounding of 1 + x (accurate for tiny x).
    u = 1.0 + x
    return tl.where(u == 1.0, x, tl.log(u) * (x / (u - 1.0)))
""",
        (),
    ),
    "expm1": (
        """
@triton.jit
def _expm1(x):
    # exp(x) - 1 corrected for tiny x.
    u = tl.exp(x)
    return tl.where(u == 1.0, x, tl.where(u - 1.0 == -1.0, -1.0, (u - 1.0) * x / tl.log(u)))
""",
        (),
    ),
    "log10": (
        """
@triton.jit
def _log10(x):
    return tl.log2(x) * 0.30102999566398120
""",
        (),
    ),
    "pow": (
        """
@triton.jit
def _pow(base, exponent):
    # Float power; negative bases are defined for integral exponents only (as in C's pow).
    magnitude = tl.exp2(exponent * tl.log2(tl.abs(base)))
    integral = tl.floor(exponent) == exponent
    odd = integral & ((tl.abs(exponent) % 2.0) == 1.0)
    signed = tl.where((base < 0) & odd, -magnitude, magnitude)
    result = tl.where((base < 0) & ~integral, float("nan"), signed)
    at_zero = tl.where(exponent > 0, 0.0, float("inf"))
    return tl.where(exponent == 0, 1.0, tl.where(base == 0, at_zero, result))
""",
        (),
    ),
    "signbit": (
        """
@triton.jit
def _signbit(x):
    return (x < 0) | ((x == 0) & ((1.0 / x) < 0))
""",
        (),
    ),
    "fmod": (
        """
@triton.jit
def _fmod(a, b):
    # C fmod: the remainder keeps the sign of a.
    q = a / b
    return a - tl.where(q < 0, tl.ceil(q), tl.floor(q)) * b
""",
        (),
    ),
}
