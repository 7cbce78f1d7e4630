"""Plain Triton stand-ins for the runtime helpers Inductor's kernels call.

Inductor kernels call `triton_helpers.*` (torch._inductor.runtime) and `libdevice.*`. A standalone candidate
may import neither torch._inductor nor (on the interpreter, which only patches `tl` and `tl.math`) libdevice,
so each helper a kernel uses is written out here as a small `@triton.jit` function with the same semantics
(NaN-propagating min/max, floor division of integers, lowest-index arg-reductions, Welford merges...).
`libdevice` functions that `tl` provides map to `tl` directly; the stand-ins for the others live in
evolution.writers.inductor.libdevice_helpers and are merged in here.

Each entry is (source, dependencies); `helper_sources` returns the used ones and their dependencies in an
order that defines every helper before its users.
"""

from __future__ import annotations

from collections.abc import Iterable

from evolution.writers.inductor.libdevice_helpers import LIBDEVICE_SOURCES

# Helper name in the candidate for each triton_helpers / libdevice function we re-implement.
HELPER_PREFIX = "_"


# The max and min variants of the arg-reduction helpers differ only in the extremum they take: one template
# each, so the pair cannot drift apart.
def _combine_with_index(name: str, arg: str, beats: str) -> str:  # beats: ">" for the max
    return f"""
@triton.jit
def _{name}_with_index(a_value, a_index, b_value, b_index):
    # {arg} combine: NaN beats numbers, ties (NaN ties too) go to the lower index, as torch.{arg} does.
    a_nan = a_value != a_value
    b_nan = b_value != b_value
    tie = (a_value == b_value) | (a_nan & b_nan)
    take_a = (a_value {beats} b_value) | (a_nan & ~b_nan) | (tie & (a_index < b_index))
    return tl.where(take_a, a_value, b_value), tl.where(take_a, a_index, b_index)
"""


def _reduce_with_index(m: str) -> str:  # m: "max" or "min"
    return f"""
@triton.jit
def _{m}_with_index(value, index, dim):
    # ({m}, index of its first occurrence) along dim; a NaN, if any, is the {m} (first NaN's index).
    best = tl.{m}(value, dim)
    is_best = value == tl.expand_dims(best, dim)
    if value.dtype.is_floating():
        is_nan = value != value
        nan_seen = tl.max(is_nan.to(tl.int8), dim) != 0
        is_best = tl.where(tl.expand_dims(nan_seen, dim), is_nan, is_best)
        best = tl.where(nan_seen, float("nan"), best).to(value.dtype)
    past_end = tl.expand_dims(tl.max(index, dim), dim) + 1
    return best, tl.min(tl.where(is_best, index, past_end), dim)
"""


_TRITON_HELPER_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
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
    "maximum_with_index": (_combine_with_index("maximum", "argmax", ">"), ()),
    "minimum_with_index": (_combine_with_index("minimum", "argmin", "<"), ()),
    "max_with_index": (_reduce_with_index("max"), ()),
    "min_with_index": (_reduce_with_index("min"), ()),
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
}
_SOURCES = {**_TRITON_HELPER_SOURCES, **LIBDEVICE_SOURCES}


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
