"""Sizes fixed for the served model become tl.constexpr in the Inductor seed's kernels: a cast of a value
built from them alone is written `tl.cast(...)`, which a constexpr takes; another method called on such a
value keeps its sizes run-time values (a constexpr has none)."""

from __future__ import annotations

import ast
import textwrap

from evolution.writers.inductor.constexpr_sizes import with_constexpr_sizes

KERNEL = textwrap.dedent(
    """
    @triton.jit
    def _poi_fused_0(in_ptr0, out_ptr0, ks0, ks1, ks2, ks3, ks4, xnumel, XBLOCK: tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
        x0 = xindex % ks0
        tmp0 = tl.load(in_ptr0 + (x0 + ks1 * (xindex // ks0))).to(tl.float32)
        tmp1 = ks2 // 2
        tmp2 = tmp1.to(tl.int64)
        tmp3 = (ks3 * XBLOCK).to(tl.float32)
        tmp4 = (ks4 + 1).item()
        tl.store(out_ptr0 + xindex, tmp0 * tmp2 / tmp3 + tmp4, xindex < xnumel)
    """
)


def _constexprs(source: str) -> set[str]:
    kernel = next(f for f in ast.parse(source).body if isinstance(f, ast.FunctionDef))
    return {a.arg for a in kernel.args.args if a.annotation is not None}


def test_fixed_sizes_become_constexpr_and_their_casts_tl_cast() -> None:
    source = with_constexpr_sizes(KERNEL, "_poi_fused_0", {"ks0", "ks1", "ks2", "ks3", "ks4"})
    # ks0 and ks1 index a load whose tensor is cast: taken. ks2 reaches .to through a local, ks3 directly:
    # taken, the casts written as tl.cast. ks4 has another method called on it: a run-time value.
    assert _constexprs(source) == {"ks0", "ks1", "ks2", "ks3", "XBLOCK"}
    assert "tmp2 = tl.cast(tmp1, tl.int64)" in source
    assert "tmp3 = tl.cast(ks3 * XBLOCK, tl.float32)" in source
    assert ".to(tl.float32)" in source  # the loaded tensor's cast stays a method call


def test_only_the_sizes_asked_for_are_taken() -> None:
    assert _constexprs(with_constexpr_sizes(KERNEL, "_poi_fused_0", {"ks0"})) == {"ks0", "XBLOCK"}
    assert with_constexpr_sizes(KERNEL, "_poi_fused_0", set()) == KERNEL
    # Another kernel's name: nothing changes in this one.
    assert _constexprs(with_constexpr_sizes(KERNEL, "_other", {"ks0"})) == {"XBLOCK"}


def test_a_local_assigned_in_a_loop_below_its_use_in_the_walk_still_carries_the_size() -> None:
    looped = KERNEL.replace(
        "    tmp1 = ks2 // 2\n",
        "    for r0_offset in range(0, 4, 2):\n        tmp1 = ks2 // 2\n",
    ).replace("    tmp2 = tmp1.to(tl.int64)", "        tmp2 = tmp1.to(tl.int64)")
    assert "for r0_offset" in looped
    source = with_constexpr_sizes(looped, "_poi_fused_0", {"ks2"})
    assert "tmp2 = tl.cast(tmp1, tl.int64)" in source and "ks2" in _constexprs(source)
