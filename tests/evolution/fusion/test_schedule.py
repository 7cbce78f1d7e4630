"""Loads issued as early as their operands allow (evolution/writers/fusion/schedule.py): on straight-line
statements, with the dependencies and the fences that hold a load back."""

from __future__ import annotations

from evolution.writers.fusion.region import Block
from evolution.writers.fusion.schedule import issue_loads_early


def _scheduled(*items: str | Block) -> list[str | Block]:
    block = Block(items=list(items))
    issue_loads_early(block)
    return block.items


def test_a_load_moves_above_a_reduction_once_its_operands_are_there() -> None:
    offs, mask, x = "offs = tl.arange(0, N)", "mask = offs < n", "x = tl.load(x_ptr + offs, mask=mask)"
    total, scale = "total = tl.sum(x * x, axis=0)", "scale = tl.rsqrt(total)"
    weight, y = "w = tl.load(w_ptr + offs, mask=mask)", "y = x * scale * w"
    assert _scheduled(offs, mask, x, total, scale, weight, y) == [offs, mask, x, weight, total, scale, y]


def test_a_load_at_positions_a_reduction_picks_waits_for_it() -> None:
    items = ("offs = tl.arange(0, N)", "x = tl.load(x_ptr + offs)", "i = tl.argmax(x, axis=0)",
             "picked = tl.load(w_ptr + i)")  # fmt: skip
    assert _scheduled(*items) == list(items)


def test_loads_keep_their_order_and_never_pass_a_name_they_rebind() -> None:
    a, t, b = "a = tl.load(p + offs)", "t = tl.max(a, axis=0)", "b = tl.load(q + offs)"
    assert _scheduled("offs = tl.arange(0, N)", a, t, b) == ["offs = tl.arange(0, N)", a, b, t]
    # `b` read before the load that binds it again (write after read): the load stays below the read.
    reads_b, rebinds_b = "c = b + 1", "b = tl.load(r + offs)"
    assert _scheduled(a, reads_b, rebinds_b) == [a, reads_b, rebinds_b]


def test_stores_and_nested_blocks_are_fences_and_nested_blocks_are_scheduled_too() -> None:
    store, reload = "tl.store(out + offs, y)", "z = tl.load(out + offs)"
    assert _scheduled("y = tl.sum(v, axis=0)", store, "s = y * 2", reload) == [
        "y = tl.sum(v, axis=0)", store, reload, "s = y * 2",
    ]  # fmt: skip
    loop = Block(header="for start in range(0, N, B):", depth=1)
    loop.items = ["acc = acc + tl.sum(u, axis=0)", "u2 = tl.load(p + start)"]
    after = "w = tl.load(q + offs)"
    assert _scheduled("acc = 0.0", loop, after) == ["acc = 0.0", loop, after]
    assert loop.items == ["u2 = tl.load(p + start)", "acc = acc + tl.sum(u, axis=0)"]
