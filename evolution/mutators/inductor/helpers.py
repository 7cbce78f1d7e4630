"""Plain Triton stand-ins for the runtime helpers Inductor's kernels call.

Inductor kernels call `triton_helpers.*` (torch._inductor.runtime) and `libdevice.*`. A standalone candidate
may import neither torch._inductor nor (on the interpreter, which only patches `tl` and `tl.math`) libdevice,
so each helper a kernel uses is written out here as a small `@triton.jit` function with the same semantics
(NaN-propagating min/max, floor division of integers, lowest-index arg-reductions, Welford merges...).
`libdevice` functions that `tl` provides map to `tl` directly.

Each entry is (source, dependencies); `helper_sources` returns the used ones and their dependencies in an
order that defines every helper before its users.
"""

from __future__ import annotations

from collections.abc import Iterable

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
# Helper name in the candidate for each triton_helpers / libdevice function we re-implement.
HELPER_PREFIX = "_"

_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "promote_to_tensor": (
        """
@triton.jit
def _promote_to_tensor(x):
    # Adding a 1-element tensor turns a scalar into a tensor (and leaves tensors alone).
    return x + tl.zeros((1,), tl.int1)
""",
        (),
    ),
    "is_floating": (
        """
@triton.jit
def _is_floating(x):
    return _promote_to_tensor(x).dtype.is_floating()
""",
        ("promote_to_tensor",),
    ),
    "div_floor_integer": (
        """
@triton.jit
def _div_floor_integer(a, b):
    # Triton's // truncates toward zero; Python (and PyTorch) floor toward -inf.
    quotient = a // b
    inexact = (a % b) != 0
    return tl.where(inexact & ((a < 0) != (b < 0)), quotient - 1, quotient)
""",
        (),
    ),
    "remainder_integer": (
        """
@triton.jit
def _remainder_integer(a, b):
    # Python's modulo takes the sign of the divisor; Triton's % takes the sign of the dividend.
    rem = a % b
    return tl.where((rem != 0) & ((rem < 0) != (b < 0)), rem + b, rem)
""",
        (),
    ),
    "pow_integer": (
        """
@triton.jit
def _pow_integer(base, exponent):
    # Exact integer power by square-and-multiply over the exponent's bits (non-negative exponents).
    bits: tl.constexpr = exponent.dtype.primitive_bitwidth
    e = exponent.to(tl.core.get_int_dtype(bits, signed=False))
    result = tl.full(base.shape, 1, base.dtype)
    for _ in tl.static_range(bits):
        result = tl.where((e & 1) != 0, result * base, result)
        e = e >> 1
        base = base * base
    return result
""",
        (),
    ),
    "maximum": (
        """
@triton.jit
def _maximum(a, b):
    # Like torch.maximum: a NaN on either side wins (a != a is false for integers).
    return tl.where((a > b) | (a != a), a, b)
""",
        (),
    ),
    "minimum": (
        """
@triton.jit
def _minimum(a, b):
    # Like torch.minimum: a NaN on either side wins (a != a is false for integers).
    return tl.where((a < b) | (a != a), a, b)
""",
        (),
    ),
    "max2": (
        """
@triton.jit
def _max2(a, dim):
    # Like torch.amax: a NaN anywhere in the reduced slice gives NaN. tl.max is vectorised (a generic
    # tl.reduce with a combine function would be called per element by the interpreter).
    result = tl.max(a, dim)
    if a.dtype.is_floating():
        nan_seen = tl.max((a != a).to(tl.int8), dim) != 0
        result = tl.where(nan_seen, float("nan"), result).to(a.dtype)
    return result
""",
        (),
    ),
    "min2": (
        """
@triton.jit
def _min2(a, dim):
    # Like torch.amin: a NaN anywhere in the reduced slice gives NaN.
    result = tl.min(a, dim)
    if a.dtype.is_floating():
        nan_seen = tl.max((a != a).to(tl.int8), dim) != 0
        result = tl.where(nan_seen, float("nan"), result).to(a.dtype)
    return result
""",
        (),
    ),
    "maximum_with_index": (
        """
@triton.jit
def _maximum_with_index(a_value, a_index, b_value, b_index):
    # argmax combine: NaN beats numbers, ties (NaN ties too) go to the lower index, as torch.argmax does.
    a_nan = a_value != a_value
    b_nan = b_value != b_value
    tie = (a_value == b_value) | (a_nan & b_nan)
    take_a = (a_value > b_value) | (a_nan & ~b_nan) | (tie & (a_index < b_index))
    return tl.where(take_a, a_value, b_value), tl.where(take_a, a_index, b_index)
""",
        (),
    ),
    "minimum_with_index": (
        """
@triton.jit
def _minimum_with_index(a_value, a_index, b_value, b_index):
    # argmin combine: NaN beats numbers, ties (NaN ties too) go to the lower index, as torch.argmin does.
    a_nan = a_value != a_value
    b_nan = b_value != b_value
    tie = (a_value == b_value) | (a_nan & b_nan)
    take_a = (a_value < b_value) | (a_nan & ~b_nan) | (tie & (a_index < b_index))
    return tl.where(take_a, a_value, b_value), tl.where(take_a, a_index, b_index)
""",
        (),
    ),
    "max_with_index": (
        """
@triton.jit
def _max_with_index(value, index, dim):
    # (max, index of its first occurrence) along dim; a NaN, if any, is the max (first NaN's index).
    best = tl.max(value, dim)
    is_best = value == tl.expand_dims(best, dim)
    if value.dtype.is_floating():
        is_nan = value != value
        nan_seen = tl.max(is_nan.to(tl.int8), dim) != 0
        is_best = tl.where(tl.expand_dims(nan_seen, dim), is_nan, is_best)
        best = tl.where(nan_seen, float("nan"), best).to(value.dtype)
    past_end = tl.expand_dims(tl.max(index, dim), dim) + 1
    return best, tl.min(tl.where(is_best, index, past_end), dim)
""",
        (),
    ),
    "min_with_index": (
        """
@triton.jit
def _min_with_index(value, index, dim):
    # (min, index of its first occurrence) along dim; a NaN, if any, is the min (first NaN's index).
    best = tl.min(value, dim)
    is_best = value == tl.expand_dims(best, dim)
    if value.dtype.is_floating():
        is_nan = value != value
        nan_seen = tl.max(is_nan.to(tl.int8), dim) != 0
        is_best = tl.where(tl.expand_dims(nan_seen, dim), is_nan, is_best)
        best = tl.where(nan_seen, float("nan"), best).to(value.dtype)
    past_end = tl.expand_dims(tl.max(index, dim), dim) + 1
    return best, tl.min(tl.where(is_best, index, past_end), dim)
""",
        (),
    ),
    "prod": (
        """
@triton.jit
def _multiply(a, b):
    return a * b


@triton.jit
def _prod(values, dim):
    return tl.reduce(values, dim, _multiply)
""",
        (),
    ),
    "any": (
        """
@triton.jit
def _any(values, dim):
    return tl.max(values.to(tl.int8), dim) != 0
""",
        (),
    ),
    "select_one": (
        """
@triton.jit
def _select_one(x, mask, dim, keep_dims=False):
    # The one element of x where mask is set, along dim: sum the bit patterns of x * mask, so any dtype works.
    bits_type = tl.core.get_int_dtype(x.dtype.primitive_bitwidth, signed=False)
    bits = tl.sum(x.to(bits_type, bitcast=True) * mask, dim, keep_dims=keep_dims)
    return bits.to(bits_type).to(x.dtype, bitcast=True)
""",
        (),
    ),
    "welford_reduce": (
        """
@triton.jit
def _welford_reduce(value, mean, m2, weight, first_iteration):
    # One more sample into running (mean, sum of squared deviations, count).
    if first_iteration:
        new_weight = tl.full(weight.shape, 1, weight.dtype)
        new_mean = value
        new_m2 = tl.zeros_like(m2)
    else:
        delta = value - mean
        new_weight = weight + 1
        new_mean = mean + delta / new_weight
        new_m2 = m2 + delta * (value - new_mean)
    return new_mean, new_m2, new_weight
""",
        (),
    ),
    "welford_combine": (
        """
@triton.jit
def _welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    # Merge two partial (mean, m2, count) triples; equal infinite means must not turn into inf - inf.
    delta = tl.where(mean_1 == mean_2, 0.0, mean_2 - mean_1)
    weight = weight_1 + weight_2
    share_2 = tl.where(weight == 0.0, 0.0, weight_2 / weight)
    return mean_1 + delta * share_2, m2_1 + m2_2 + delta * delta * weight_1 * share_2, weight
""",
        (),
    ),
    "welford": (
        """
@triton.jit
def _welford(mean, m2, weight, dim):
    # Merge partial (mean, m2, count) along dim in one vectorised pass: the pooled mean, then each part's
    # m2 plus its count times its squared distance to the pooled mean. Empty parts add nothing.
    count = tl.sum(weight, dim)
    pooled = tl.sum(mean * weight, dim) / tl.where(count == 0.0, 1.0, count)
    delta = mean - tl.expand_dims(pooled, dim)
    spread = tl.where(weight == 0.0, 0.0, m2 + weight * delta * delta)
    return pooled, tl.sum(spread, dim), count
""",
        (),
    ),
    "device_assert_then": (
        """
@triton.jit
def _device_assert_then(cond, msg, value):
    tl.device_assert(cond, msg)
    return value
""",
        (),
    ),
    # --- libdevice functions without a tl equivalent --------------------------------------------------------
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


def known_helpers() -> frozenset[str]:
    return frozenset(_SOURCES)


def helper_name(function: str) -> str:
    return HELPER_PREFIX + function


def helper_sources(used: Iterable[str]) -> list[str]:
    """Sources of the helpers in `used` plus what they call, dependencies first (each once)."""
    ordered: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        source, deps = _SOURCES[name]
        for dep in deps:
            visit(dep)
        ordered.append(source.strip("\n"))

    for name in sorted(used):
        visit(name)
    return ordered
