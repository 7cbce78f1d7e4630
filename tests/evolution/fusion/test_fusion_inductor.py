"""fusion:inductor: Inductor's launch structure read from an Inductor-seeded candidate (kernel kind, XBLOCK,
R0_BLOCK, num_warps) becomes fusion knobs, and on a norm task the move writes a correct fusion kernel with
exactly those knobs."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from pathlib import Path

import pytest
from fusion_tasks import check
from test_readable import RMS_INPUTS, RMS_REFERENCE

from evaluators.task import load_task
from evolution.config import SearchConfig
from evolution.islands import Archive
from evolution.moves import MoveChooser
from evolution.mutators.fusion_inductor import (
    FusionInductorMutator,
    InductorLaunch,
    around,
    inductor_launch,
)
from evolution.mutators.fusion_seed import FusionSeedMutator
from evolution.operators import OperatorSet
from evolution.sampling import ParentSampler
from evolution.types import MutationOutcome, MutationRequest
from evolution.writers.fusion.knobs import Knobs, parse
from evolution.writers.fusion.writer import FusionWriter
from tests.evolution.search_fakes import timed_program

EXAMPLES = Path(__file__).parents[3] / "examples" / "tasks"

# The launches of an Inductor-seeded candidate as evolution.writers.inductor writes them (kernel bodies
# left out: only the launches and the constants they pass are read).
INDUCTOR = """
K0_XBLOCK = 1024
K0_NUM_WARPS = 4
K1_XBLOCK = 2
K1_NUM_WARPS = 8


def add_rmsnorm(x, residual, weight, eps=1e-06):
    k0_grid = (triton.cdiv(x.numel(), K0_XBLOCK),)
    _poi_fused_add_0[k0_grid](x, residual, x.numel(), XBLOCK=K0_XBLOCK, num_warps=K0_NUM_WARPS)
    k1_grid = (triton.cdiv(x.shape[0], K1_XBLOCK),)
    _per_fused_mean_mul_pow_rsqrt_1[k1_grid](
        x, weight, eps, x.shape[0], x.shape[1],
        XBLOCK=K1_XBLOCK, R0_BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=K1_NUM_WARPS,
    )
    return x, residual
"""
LOOPED = INDUCTOR.replace("_per_fused", "_red_fused").replace(
    "R0_BLOCK=triton.next_power_of_2(x.shape[1])", "R0_BLOCK=K1_R0_BLOCK"
)
LOOPED = LOOPED.replace("K1_NUM_WARPS = 8", "K1_NUM_WARPS = 8\nK1_R0_BLOCK = 64")
# The opening of a looped reduction's body as Inductor writes it below 2**31 elements (int32 offsets, the
# first pass's loads kept in L2).
BODY = """

@triton.jit
def _red_fused_mean_mul_pow_rsqrt_1(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr,
                                    R0_BLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        tmp0 = tl.load(in_ptr0 + (r0_index + r0_numel * xindex), None, eviction_policy='evict_last')
"""


def test_the_launch_structure_is_read_and_becomes_knobs() -> None:
    persistent = inductor_launch(INDUCTOR)  # the reduction, not the pointwise kernel before it
    assert persistent == InductorLaunch("persistent", 2, 0, 8, index32=True)
    assert persistent.knobs(Knobs(topk="threshold")) == Knobs(
        rows=2, num_warps=8, topk="threshold", index32=True
    )
    looped = inductor_launch(LOOPED)
    assert looped == InductorLaunch("looped", 2, 64, 8, index32=True)
    assert looped.knobs(Knobs()) == Knobs(rows=2, passes="two", block=64, num_warps=8, index32=True)
    # Inductor's hints and index width, as its kernel bodies write them, carry over.
    hinted = inductor_launch(LOOPED + BODY)
    assert hinted == InductorLaunch("looped", 2, 64, 8, eviction=True, index32=True)
    wide = inductor_launch(LOOPED + BODY.replace("tl.program_id(0)", "tl.program_id(0).to(tl.int64)"))
    assert wide is not None and wide.eviction and not wide.index32
    assert wide.knobs(Knobs()) == Knobs(
        rows=2, passes="two", block=64, num_warps=8, eviction=True, index32=False
    )
    pointwise = inductor_launch(INDUCTOR.split("    k1_grid")[0])
    assert pointwise is not None
    assert pointwise.knobs(Knobs()) == Knobs(inner="block", block=1024, num_warps=4, index32=True)
    assert inductor_launch("def f(x):\n    return x\n") is None


@pytest.mark.slow  # one trace (Dynamo, seconds) and the child runs on the interpreter
def test_the_move_writes_a_correct_kernel_with_inductors_knobs(tmp_path) -> None:
    from fusion_tasks import write_task

    cases = [
        {"name": "t3_bf16", "tokens": 3, "hidden": 96, "dtype": "bfloat16"},
        {"name": "t2_fp32", "tokens": 2, "hidden": 40, "dtype": "float32"},
    ]
    root = write_task(tmp_path / "add_rmsnorm", "add_rmsnorm", RMS_REFERENCE, RMS_INPUTS, cases)
    task = load_task(root)
    writer = FusionWriter()
    seed = asyncio.run(FusionSeedMutator(writer).mutate(MutationRequest(task, None)))
    assert seed.child_source, seed.error
    parent = timed_program(
        "fusion", {"t3_bf16": 1.2, "t2_fp32": 1.0}, source=seed.child_source, operator="seed:fusion"
    )
    # Slower on one case and within noise (MIN_GAIN) on the other: not a structure to take.
    slower = timed_program(
        "slow", {"t3_bf16": 0.9, "t2_fp32": 1.005}, source=LOOPED, operator="seed:inductor"
    )
    mutator = FusionInductorMutator(writer)
    outcome = asyncio.run(mutator.mutate(MutationRequest(task, parent, (slower,))))
    assert outcome.child_source is None and "no inspiration" in outcome.error  # Inductor is not faster
    # Behind the parent on aggregate but ahead on one size: the move takes its structure for that size.
    faster = timed_program(
        "inductor", {"t3_bf16": 0.8, "t2_fp32": 1.3}, source=LOOPED, operator="seed:inductor"
    )
    assert faster.score < parent.score
    outcome = asyncio.run(mutator.mutate(MutationRequest(task, parent, (slower, faster))))
    assert outcome.child_source, outcome.error
    assert parse(outcome.child_source) == Knobs(rows=2, passes="two", block=64, num_warps=8, index32=True)
    assert "num_warps=NUM_WARPS" in outcome.child_source and "_num_warps(" not in outcome.child_source
    assert check(root, outcome.child_source) > 0
    # Proposed once per task; the next call walks one step around Inductor's launch.
    again = asyncio.run(mutator.mutate(MutationRequest(task, parent, (faster,))))
    assert again.child_source, again.error
    step = parse(again.child_source)
    assert step in around(parse(outcome.child_source), steps=1)[1:]
    assert check(root, again.child_source) > 0


def test_the_walk_around_inductors_launch_reaches_two_steps_and_no_further() -> None:
    """Inductor's looped norm launch (chunks of 2048, 8 warps): first itself, then every launch one step
    away, then two: chunks of 4096 with 16 warps (compile's own launch at 4096 tokens) comes first, the
    block scaled with its warps; every knob stays in range and the fusion choices (top-k, rounding) are
    never touched."""
    start = Knobs(passes="two", block=2048, num_warps=8, eviction=True, topk="threshold")
    walk = around(start)
    assert walk[0] == start and len(walk) == len(set(walk))
    ring1 = [(k.block, k.num_warps, k.rows) for k in walk[1:8]]
    assert ring1[:2] == [(4096, 16, 1), (1024, 4, 1)]
    assert set(ring1[2:]) == {(4096, 8, 1), (1024, 8, 1), (2048, 16, 1), (2048, 4, 1), (2048, 8, 2)}
    assert walk[1] == Knobs(passes="two", block=4096, num_warps=16, eviction=True, topk="threshold")
    assert (8192, 32, 1) in {(k.block, k.num_warps, k.rows) for k in walk[8:]}  # two steps
    assert all(k.topk == "threshold" and k.eviction and k.passes == "two" for k in walk)
    far = around(Knobs(passes="two", block=16384, num_warps=32, rows=64))
    assert max(k.block for k in far) == 16384 and max(k.num_warps for k in far) == 32
    assert max(k.rows for k in far) == 64


def test_a_looped_launch_of_several_rows_is_walked_from_one_row_first() -> None:
    """A launch tuner took two rows per program on the dynamic seed (chunks of 2048, 8 warps): the walk
    proposes that launch, then one row per program, then one row with chunks of 4096 and 16 warps
    (compile's launch at 4096 tokens), before any other step around two rows."""
    start = Knobs(passes="two", block=2048, num_warps=8, rows=2, eviction=True)
    walk = around(start)
    assert walk[0] == start and len(walk) == len(set(walk))
    assert [(k.block, k.num_warps, k.rows) for k in walk[1:4]] == [(2048, 8, 1), (4096, 16, 1), (1024, 4, 1)]
    assert (4096, 16, 2) in {(k.block, k.num_warps, k.rows) for k in walk[4:12]}  # two rows walked too
    # A one-pass launch keeps its rows: one row per program is two steps away, not a start.
    one_pass = Knobs(passes="one", rows=4, num_warps=8)
    assert dataclasses.replace(one_pass, rows=1) not in around(one_pass, steps=1)


class _AnyParent:
    """A move that takes any parent, drawn by weight (the search's other moves)."""

    name = "tune:launch"

    def can_seed(self) -> bool:
        return False

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        return MutationOutcome(self.name, None, error="unused")


def test_a_faster_inductor_launch_not_yet_written_for_a_parent_is_asked_first() -> None:
    """A tune:compile child timed after the move last ran: its structure, unwritten for the fusion parent,
    is the next move whatever the draw's weights, and once written the draw goes by weight again."""
    task = load_task(EXAMPLES / "rmsnorm_residual")
    writer = FusionWriter()
    move = FusionInductorMutator(writer)
    move.start(task)
    operators = OperatorSet([], [move, _AnyParent()], [0.001, 1.0])
    fusion = "# fusion-knobs: {}\ndef fused_add_rmsnorm(x, residual, weight, eps):\n    pass\n"
    config = SearchConfig()
    archive = Archive(config.archive)
    archive.place(timed_program("f", {"a": 1.0, "b": 1.0}, source=fusion, operator="seed:fusion"), 0)
    archive.place(timed_program("c", {"a": 1.2, "b": 0.9}, source=LOOPED, operator="tune:compile"), 0)

    def draws(n: int) -> list[tuple[str, str]]:
        moves = []
        for seed in range(n):
            sampler = ParentSampler(config.sampling, random.Random(seed))
            chosen = MoveChooser(operators, sampler, random.Random(seed)).next(archive, 0)
            assert chosen is not None
            moves.append((chosen.operator.name, chosen.choice.parent.id))
        return moves

    assert set(draws(10)) == {("fusion:inductor", "f")}
    launch = inductor_launch(LOOPED)
    assert launch is not None
    assert writer.claim(task, launch.knobs(Knobs()))  # the move ran on the pair: it claims that structure
    assert {name for name, _ in draws(10)} == {"tune:launch"}
    # An Inductor launch within noise of the parent is no reason to jump the draw.
    level = Archive(config.archive)
    level.place(timed_program("f", {"a": 1.0, "b": 1.0}, source=fusion, operator="seed:fusion"), 0)
    level.place(timed_program("c", {"a": 1.005, "b": 0.9}, source=INDUCTOR, operator="tune:compile"), 0)
    parent = next(p for p in level.all_elites() if p.id == "f")
    assert not move.asked_first_for(parent, [p for p in level.all_elites() if p.id == "c"])
