"""A pure statement that reads a value the reference later rebinds is written before the rebinding
(evolution/writers/fusion/rebind_order.py), so that naming.py can give the new value the reference's name:
a norm's `residual = x.to(...)` before `x = x * tl.rsqrt(...)`, no `x_2`."""

from __future__ import annotations

from evolution.writers.fusion.rebind_order import reads_before_rebinding, stored_values

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


# LMDeploy's norm: `residual = x` names the sum a second time, and the kernel stores the old `x` last.
ALIASED = """@triton.jit
def _k(x_ptr, r_ptr, x_out_ptr, residual_out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x_1 = tl.load(x_ptr + offs)
    residual_2 = tl.load(r_ptr + offs)
    v3 = (x_1.to(tl.float32) + residual_2.to(tl.float32)).to(tl.bfloat16).to(tl.float32)
    v4 = tl.sum(v3 * v3, axis=0) / N
    v5 = v3 * tl.rsqrt(v4)
    tl.store(x_out_ptr + offs, v5.to(tl.bfloat16))
    tl.store(residual_out_ptr + offs, v3.to(tl.bfloat16), mask=offs < N)
"""
ALIASED_NAMES = {"x_1": "x", "residual_2": "residual", "v3": "x", "v4": "variance", "v5": "x"}


def test_a_stored_read_of_the_old_value_is_bound_and_named_for_its_output() -> None:
    split, named = stored_values(ALIASED, ALIASED_NAMES)
    assert named == {"stored0": "residual"}
    bound = "    stored0 = v3.to(tl.bfloat16)\n"
    assert bound + "    tl.store(residual_out_ptr + offs, stored0, mask=offs < N)" in split
    assert "tl.store(x_out_ptr + offs, v5.to(tl.bfloat16))" in split  # reads the newest `x`: stays
    moved = reads_before_rebinding(split, {**ALIASED_NAMES, **named})
    lines = [line.strip() for line in moved.splitlines()]
    assert lines.index("stored0 = v3.to(tl.bfloat16)") < lines.index("v5 = v3 * tl.rsqrt(v4)")


def test_a_store_is_left_whole_without_a_rebinding_or_an_output_name() -> None:
    assert stored_values(ALIASED, {**ALIASED_NAMES, "v5": "normed"}) == (ALIASED, {})  # `x` not rebound
    numbered = ALIASED.replace("residual_out_ptr", "out1_ptr")
    assert stored_values(numbered, ALIASED_NAMES) == (numbered, {})  # no name to give it
    loaded = ALIASED.replace("v3.to(tl.bfloat16), mask", "tl.load(r_ptr + offs) + v3, mask")
    assert stored_values(loaded, ALIASED_NAMES) == (loaded, {})  # a load is not moved


LOOPED = """@triton.jit
def _k(x_ptr, r_ptr, x_out_ptr, residual_out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    first = tl.program_id(0)
    for pid in range(first, 8, 4):
        x_1 = tl.load(x_ptr + pid * N + offs)
        residual_2 = tl.load(r_ptr + pid * N + offs)
        v3 = (x_1.to(tl.float32) + residual_2.to(tl.float32)).to(tl.bfloat16).to(tl.float32)
        v4 = tl.sum(v3 * v3, axis=0) / N
        v5 = v3 * tl.rsqrt(v4)
        tl.store(x_out_ptr + pid * N + offs, v5.to(tl.bfloat16))
        tl.store(residual_out_ptr + pid * N + offs, v3.to(tl.bfloat16))
"""


def test_a_persistent_loop_body_is_reordered_like_the_kernel() -> None:
    """A persistent kernel's rows are a loop's body: the store's value is bound and moved there too."""
    split, named = stored_values(LOOPED, ALIASED_NAMES)
    assert named == {"stored0": "residual"}
    moved = reads_before_rebinding(split, {**ALIASED_NAMES, **named})
    lines = [line.strip() for line in moved.splitlines()]
    assert lines.index("stored0 = v3.to(tl.bfloat16)") < lines.index("v5 = v3 * tl.rsqrt(v4)")
    assert "        stored0 = v3.to(tl.bfloat16)\n" in moved  # in the loop's body


def test_a_stored_name_gets_the_output_name_as_an_alias() -> None:
    """In float32 the example engine's norm: `residual = x.to(orig_dtype)` is no cast at all, so the store
    reads the old `x` itself; it is stored as `residual = x`, bound before `x` is rebound."""
    bare = ALIASED.replace("v3.to(tl.bfloat16), mask=offs < N", "v3, mask=offs < N")
    split, named = stored_values(bare, ALIASED_NAMES)
    assert named == {"stored0": "residual"} and "    stored0 = v3\n" in split
    lines = [line.strip() for line in reads_before_rebinding(split, {**ALIASED_NAMES, **named}).splitlines()]
    assert lines.index("stored0 = v3") < lines.index("v5 = v3 * tl.rsqrt(v4)")
