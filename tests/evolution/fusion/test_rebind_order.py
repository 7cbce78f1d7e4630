"""A pure statement that reads a value the reference later rebinds is written before the rebinding
(evolution/writers/fusion/rebind_order.py), so that naming.py can give the new value the reference's name:
a norm's `residual = x.to(...)` before `x = x * tl.rsqrt(...)`, no `x_2`."""

from __future__ import annotations

from evolution.writers.fusion.rebind_order import reads_before_rebinding

NORM = """@triton.jit
def _k(x_ptr, r_ptr, out_ptr, res_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x_1 = tl.load(x_ptr + offs)
    v2 = x_1.to(tl.float32) + tl.load(r_ptr + offs).to(tl.float32)
    v3 = tl.sum(v2 * v2, axis=0) / N
    # the row's scale
    v4 = v2 * tl.rsqrt(v3)
    v5 = v4.to(tl.bfloat16)

    v6 = v2.to(tl.bfloat16)
    tl.store(out_ptr + offs, v5)
    tl.store(res_ptr + offs, v6)
"""
REFERENCE = {"x_1": "x", "v2": "x", "v3": "variance", "v4": "x", "v5": "x", "v6": "residual"}


def test_a_pure_read_of_the_old_value_moves_before_the_rebinding() -> None:
    moved = reads_before_rebinding(NORM, REFERENCE)
    lines = [line.strip() for line in moved.splitlines() if line.strip()]
    at = {line.split(" = ")[0]: k for k, line in enumerate(lines) if " = " in line}
    assert at["v6"] < at["v4"] < at["v5"]  # before the first rebinding of `x`, and no further up
    assert at["v6"] > at["v3"] and lines[at["v4"] - 1] == "# the row's scale"
    assert sorted(moved.splitlines()) == sorted(NORM.splitlines())  # the same lines, one moved


def test_loads_stores_and_statements_without_a_rebound_read_stay() -> None:
    loaded = NORM.replace("v6 = v2.to(tl.bfloat16)", "v6 = tl.load(res_ptr + offs) + v2")
    assert reads_before_rebinding(loaded, REFERENCE) == loaded  # a load keeps its place
    other = {k: v for k, v in REFERENCE.items() if k not in ("v4", "v5")}  # `x` not rebound
    assert reads_before_rebinding(NORM, other) == NORM
