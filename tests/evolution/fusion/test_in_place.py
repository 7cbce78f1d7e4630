"""A barrier between a kernel's loads of a tensor at other offsets and its in-place store to it."""

from __future__ import annotations

from evolution.writers.fusion.in_place import BARRIER, barriers_explained, fence_in_place_stores
from evolution.writers.fusion.region import Block

# LMDeploy's rotary embedding, as the writer spells it: the row, its other half, then the row written back.
ROTATION = [
    "q = tl.load(q_ptr + q_offs, mask=mask, other=0)",
    "q_2 = tl.load(q_ptr + q_offs_2, mask=mask_2, other=0)",
    "k = tl.load(k_ptr + k_offs, mask=mask, other=0)",
    "k_2 = tl.load(k_ptr + k_offs_2, mask=mask_2, other=0)",
    "out = q * cos + q_2 * sin",
    "out_2 = k * cos + k_2 * sin",
    "tl.store(q_ptr + q_offs, out.to(tl.bfloat16), mask=mask)",
    "tl.store(k_ptr + k_offs, out_2.to(tl.bfloat16), mask=mask)",
]


def test_a_store_over_a_tensor_read_at_other_offsets_waits_for_every_lane() -> None:
    root = Block(items=list(ROTATION))
    fence_in_place_stores([], [root])
    # One barrier before the first store: it orders every earlier load before both stores.
    assert root.items == [*ROTATION[:6], BARRIER, *ROTATION[6:]]


def test_an_elementwise_update_or_a_store_elsewhere_needs_no_barrier() -> None:
    elementwise = [
        "x = tl.load(x_ptr + offs, mask=mask, other=0)",
        "w = tl.load(w_ptr + offs_2, mask=mask_2, other=0)",
        "tl.store(x_ptr + offs, (x * w).to(tl.bfloat16), mask=mask)",  # each lane its own element
        "tl.store(out_ptr + offs_2, x, mask=mask_2)",  # never loaded
        "tl.store(w_ptr + offs_2, w, mask=mask_2)",  # loaded at the same offsets only
    ]
    root = Block(items=list(elementwise))
    fence_in_place_stores([], [root])
    assert root.items == elementwise


def test_loads_before_a_loop_or_in_the_prologue_fence_the_loops_store() -> None:
    loop = Block(
        header="for start in range(0, N, BLOCK):", depth=1, items=["tl.store(x_ptr + offs, y, mask=m)"]
    )
    root = Block(items=["x_2 = tl.load(x_ptr + (offs + HALF), mask=m, other=0)", loop])
    fence_in_place_stores([], [root])
    assert loop.items == [BARRIER, "tl.store(x_ptr + offs, y, mask=m)"]
    hoisted = Block(items=["tl.store(w_ptr + offs, y, mask=m)"])
    fence_in_place_stores(["w_2 = tl.load(w_ptr + offs_2, mask=m, other=0)"], [hoisted])
    assert hoisted.items[0] == BARRIER


def test_a_barrier_already_there_is_not_doubled() -> None:
    items = [ROTATION[0], ROTATION[1], BARRIER, ROTATION[6]]
    root = Block(items=list(items))
    fence_in_place_stores([], [root])
    assert root.items == items


def test_a_second_pass_is_not_fenced_by_the_loads_of_the_first() -> None:
    """A two-pass norm updating its residual in place: the first loop's loads end in a sum every lane
    finishes; the second loop reads and writes each chunk in one lane."""
    first = Block(
        header="for start in range(0, N, BLOCK):", depth=1, items=["r = tl.load(r_ptr + r_offs, mask=m)"]
    )
    second = Block(
        header="for start_2 in range(0, N, BLOCK):",
        depth=1,
        items=[
            "r_2 = tl.load(r_ptr + r_offs_2, mask=m_2)",
            "tl.store(r_ptr + r_offs_2, r_2 * scale, mask=m_2)",
        ],
    )
    root = Block(items=[first, "scale = tl.rsqrt(tl.sum(acc, axis=0))", second])
    fence_in_place_stores([], [root])
    assert BARRIER not in second.items and BARRIER not in root.items


def test_a_barrier_says_why_it_is_there() -> None:
    """A reader takes a bare `tl.debug_barrier()` for a debugging leftover: the kernel says why, once per
    barrier, at its indent, and only where the comment fits the engine's line length."""
    body = ["q = tl.load(q_ptr + offs_lo)", BARRIER, "tl.store(q_ptr + offs, q)"]
    kernel = "def k():\n" + "".join(f"    {line}\n" for line in body)
    explained = barriers_explained(kernel, 100)
    lines = explained.splitlines()
    barrier = lines.index(f"    {BARRIER}")
    assert lines[barrier - 1].startswith("    # In place: ") and explained.count("# In place") == 1
    assert barriers_explained(explained, 100) == explained
    assert barriers_explained(kernel, 60) == kernel
