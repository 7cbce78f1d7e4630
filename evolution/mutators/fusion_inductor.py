"""fusion:inductor — the fusion writer takes Inductor's structure where torch.compile's own kernel is faster.

A candidate seeded from Inductor's Triton code (seed:inductor, or a launch-tuned child of it) launches its
kernels with named constants: `K0_XBLOCK` (rows, or elements, per program), `K0_R0_BLOCK` (a looped
reduction's chunk; a persistent reduction sizes it by the row instead), `K0_NUM_WARPS`. Its kernel names
keep Inductor's kind: `_per_` (the row whole in registers), `_red_` (the row walked in chunks), `_poi_`
(pointwise). When such a candidate beats a fusion parent on some case, this move rewrites the parent with
the same structure as fusion knobs: rows = XBLOCK and one pass for a persistent reduction, two passes in
chunks of R0_BLOCK for a looped one, blocks of XBLOCK for pointwise code, Inductor's warps, its eviction
hints where its loads carry them and its int32 offsets where it indexes in 32 bits. The search can then
always reach Inductor's layout from a fusion kernel, with the fusion kernel's own fusions kept. Once that
launch was proposed, the move walks around it (`around`: block, warps and rows doubled or halved, one
step, then two), since the fusion kernel's body is not Inductor's and may want another launch.

The move is asked before the weighted draw for a parent whose inspirations hold a faster Inductor launch
whose structure was not yet written with that parent's fusion choices. torch.compile's own launches
(tune:compile) are timed after the Inductor seed, often after this move last ran on the seed's launch; on
an H100 search of the SGLang RMSNorm the best tune:compile child (chunks of 4096, 16 warps) was never
written as a fusion kernel before the search's time ran out, and the shipped module carried Inductor's code
beside the fusion kernel instead of one fusion kernel with that launch. Asked first, the next search wrote
it 36 s after compile's launches were timed (docs/results/2026-12-08-h100.md).

A case, not the aggregate: a norm's one-pass kernel beats compile on a decode batch and trails it at 4096
tokens, where Inductor's looped kernel wins; the child then wins those sizes, and bucket crossover routes
them to it.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from evaluators.task import Task
from evolution.mutators.base import child_problem, failed
from evolution.mutators.bucket_crossover import MIN_GAIN
from evolution.mutators.fusion_variant import in_parent
from evolution.types import MutationOutcome, MutationRequest, Program, case_speedups
from evolution.writers.fusion.generate import GenerationError
from evolution.writers.fusion.knobs import Knobs, parse
from evolution.writers.fusion.writer import FusionWriter

OPERATOR = "fusion:inductor"
_KINDS = {"_per_": "persistent", "_red_": "looped", "_poi_": "pointwise"}
_EVICTION = re.compile(r"eviction_policy=['\"]evict_(first|last)['\"]")
# Inductor's 64-bit indexing widens the program id or the lane offsets; otherwise its offsets are int32.
_INDEX64 = re.compile(r"(program_id\(\d\)|tl\.arange\([^)]*\)(\[[^\]]*\])?)\.to\(tl\.int64\)")


@dataclass(frozen=True)
class InductorLaunch:
    """How Inductor launches its main kernel (the reduction when there is one, else the first kernel)."""

    kind: str  # persistent | looped | pointwise
    xblock: int  # rows per program (reductions) or elements per program (pointwise)
    rblock: int  # a looped reduction's chunk (0 for the others)
    num_warps: int
    eviction: bool = False  # its loads carry eviction hints (a looped reduction's first pass evict_last)
    index32: bool = False  # its offsets are int32 (Inductor widens them only for 2**31 elements or more)

    def knobs(self, base: Knobs) -> Knobs:
        """`base` with this structure: launch knobs replaced, fusion choices (top-k, rounding) kept."""
        rows = _power_of_two(self.xblock)
        warps = min(_power_of_two(self.num_warps), 32)
        if self.kind == "pointwise":
            base = dataclasses.replace(base, inner="block", block=max(rows, 16), rows=1)
        elif self.kind == "looped":
            base = dataclasses.replace(
                base, rows=rows, passes="two", block=max(_power_of_two(self.rblock), 16)
            )
        else:
            base = dataclasses.replace(base, rows=rows, passes="one")
        return dataclasses.replace(base, num_warps=warps, eviction=self.eviction, index32=self.index32)


def inductor_launch(source: str) -> InductorLaunch | None:
    """The launch of an Inductor-seeded candidate's main kernel, read from its launches and the module
    constants they pass; None when `source` launches no kernel of Inductor's naming with constant blocks."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    constants = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, int)
    }
    # A block the host picks per call (`k0_xblock = min(K0_XBLOCK, ...)`, a small launch's smaller block)
    # reads as its cap, the tuned constant: the block of the large launches.
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "min"
            and node.value.args
            and isinstance(node.value.args[0], ast.Name)
            and node.value.args[0].id in constants
        ):
            constants.setdefault(node.targets[0].id, constants[node.value.args[0].id])
    launches = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        kernel = node.func.value
        kind = next((k for p, k in _KINDS.items() if isinstance(kernel, ast.Name) and p in kernel.id), None)
        if kind is None:
            continue
        passed = {
            k.arg: constants.get(k.value.id) if isinstance(k.value, ast.Name) else None for k in node.keywords
        }
        rblock = passed.get("R0_BLOCK") or passed.get("RBLOCK") or 0
        xblock = passed.get("XBLOCK") or 1  # a kernel without XBLOCK runs one row per program
        warps = passed.get("num_warps")
        if warps is None or (kind == "looped" and not rblock):
            continue
        launches.append(
            InductorLaunch(
                kind,
                int(xblock),
                int(rblock) if kind == "looped" else 0,
                int(warps),
                eviction=bool(_EVICTION.search(source)),
                index32=not _INDEX64.search(source),
            )
        )
    reductions = [launch for launch in launches if launch.kind != "pointwise"]
    chosen = reductions or launches
    return chosen[0] if chosen else None


@lru_cache(maxsize=256)
def _launch_of(source: str) -> InductorLaunch | None:
    """inductor_launch, once per source: the chooser asks for each eligible parent's inspirations."""
    return inductor_launch(source)


def _power_of_two(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length() if n > 1 else 1


class FusionInductorMutator:
    name = OPERATOR
    needs_compiled_parent = True
    exhaustion_ignores_inspirations = False  # a faster Inductor candidate may show up later

    def __init__(self, writer: FusionWriter | None = None) -> None:
        self.writer = writer or FusionWriter()
        self._task: Task | None = None

    def start(self, task: Task) -> None:
        """The run's task (the controller calls this as the run starts)."""
        self._task = task

    def asked_first_for(self, parent: Program, inspirations: Sequence[Program]) -> bool:
        """Whether the faster Inductor launch among `inspirations` has its structure unwritten for the
        parent's fusion choices (the move's first child for the pair; the walk around it is drawn as other
        moves are). False once the move ran: it claims that structure first."""
        if self._task is None or (knobs := parse(parent.source)) is None:
            return False
        faster = _faster_inductor(parent, inspirations, self._task.regime)
        launch = _launch_of(faster.source) if faster is not None else None
        return launch is not None and not self.writer.proposed(self._task, launch.knobs(knobs))

    def can_seed(self) -> bool:
        return False

    def accepts(self, source: str) -> bool:
        return parse(source) is not None

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        parent = request.parent
        if parent is None or (knobs := parse(parent.source)) is None:
            return failed(
                OPERATOR, "the move rewrites a fusion candidate (a parent with a fusion-knobs line)"
            )
        faster = _faster_inductor(parent, request.inspirations, request.task.regime)
        if faster is None:
            return _exhausted("no inspiration from torch.compile's code is faster than the parent on a case")
        launch = _launch_of(faster.source)
        if launch is None:
            return _exhausted(f"{faster.id} launches no kernel whose structure can be read")
        task = request.task
        report = await self.writer.report(task)
        if report.error:
            return _exhausted(f"the reference no longer traces: {report.error}")
        move = next(
            (m for m in around(launch.knobs(knobs)) if m != knobs and self.writer.claim(task, m)), None
        )
        if move is None:
            return _exhausted(
                f"Inductor's structure ({launch}) and its neighbours were proposed for this task"
            )
        try:
            generated = await self.writer.write(task, report, move)
        except GenerationError as exc:
            return failed(OPERATOR, f"fusion:inductor: {exc}")
        child = in_parent(parent.source, generated.source)
        problem = child_problem(parent.source, child, task.entry)
        if problem is not None:
            return failed(OPERATOR, f"the child is not valid: {problem}")
        return MutationOutcome(operator=OPERATOR, child_source=child)


# How far from Inductor's own launch the move walks (steps of block, num_warps or rows, each x2 or /2).
AROUND_STEPS = 2


def around(structure: Knobs, steps: int = AROUND_STEPS) -> list[Knobs]:
    """`structure` first, then the launches one step from it, then two: a block and its warps doubled or
    halved together (each thread's share of the chunk unchanged), then a block, warp count or row count
    alone. Inductor's launch is tuned for its own loop body, not for the fusion kernel's, and the seed's
    for dynamic shapes, not for the sizes torch.compile is timed at. On the H200 the SGLang RMSNorm seed
    launches chunks of 2048 with 8 warps; compiled for 4096 tokens, Inductor launches chunks of 4096 with
    16 warps, and the fusion kernel with that launch runs at compile's time there (0.998-1.002x), where
    the search's one-pass kernels trail it by 3-5 %: the first step of the walk.

    A looped reduction that walks several rows per program is also walked from one row per program, and
    that walk goes first after `structure` itself: Inductor, compiling for a row longer than one chunk,
    launches one row per program, and a launch tuner that took two rows on the dynamic seed (two rows of
    4096 in one program on the H200) would otherwise carry them through the whole first ring."""
    starts = [structure]
    if structure.passes == "two" and structure.rows > 1:
        starts.append(dataclasses.replace(structure, rows=1))
    order, frontier = list(starts), starts[::-1]
    for _ in range(steps):
        nearer = []
        for knobs in frontier:
            for change in _launch_steps(knobs):
                try:
                    step = dataclasses.replace(knobs, **change)
                except ValueError:
                    continue  # off the knob's range
                if step not in order:
                    order.append(step)
                    nearer.append(step)
        frontier = nearer
    return order


def _launch_steps(knobs: Knobs) -> list[dict[str, Any]]:
    """One-step changes of the launch (within the ranges fusion:variant walks), the block scaled with its
    warps first."""
    blocks: list[int] = []
    if knobs.passes == "two" or knobs.inner == "block":
        blocks = [b for b in (knobs.block * 2, knobs.block // 2) if 16 <= b <= 16384]
    warps = [w for w in (knobs.num_warps * 2, knobs.num_warps // 2) if knobs.num_warps and 1 <= w <= 32]
    scaled = ((knobs.block * 2, knobs.num_warps * 2), (knobs.block // 2, knobs.num_warps // 2))
    together = [{"block": b, "num_warps": w} for b, w in scaled if b in blocks and w in warps]
    return [
        *together,
        *({"block": b} for b in blocks),
        *({"num_warps": w} for w in warps),
        *({"rows": r} for r in (knobs.rows * 2, knobs.rows // 2) if 1 <= r <= 64),
    ]


def _faster_inductor(parent: Program, inspirations: Sequence[Program], regime: str) -> Program | None:
    """The correct inspiration written from Inductor's code with the largest lead over `parent` on one of
    the cases both were timed on in `regime` (at least MIN_GAIN, the noise a gain must clear)."""
    mine = case_speedups(parent.result, regime)
    best: tuple[float, Program] | None = None
    for p in inspirations:
        if p.result is None or not p.result.correct or not re.search(r"K\d+_NUM_WARPS\b", p.source):
            continue  # only launches that keep Inductor's named constants can be read
        theirs = case_speedups(p.result, regime)
        leads = [theirs[n] / mine[n] for n in mine.keys() & theirs.keys()]
        lead = max(leads, default=0.0)
        if lead >= 1.0 + MIN_GAIN and (best is None or lead > best[0]):
            best = (lead, p)
    return best[1] if best else None


def _exhausted(why: str) -> MutationOutcome:
    return MutationOutcome(OPERATOR, None, error=f"fusion:inductor: {why}", exhausted=True)
