"""Bucket crossover: a mutation that needs no LLM and combines two correct candidates by input size.

Different kernels win at different sizes (one launch layout wins decode batches, another the 4096-token
prefills), yet a single candidate's aggregate score hides that. For the parent A and each correct, timed
inspiration B, the cases both were timed on are ordered by the bytes of their tensor inputs; every cut between
two neighbouring sizes, with B on the small side or on the large side, and every band of middle sizes with B
inside it and A on both sides (built as two routes, the second sending the sizes below the band back to A),
gives a routed geometric-mean speedup. Among the splits whose routed cases gain MIN_GAIN as a group (B's
geometric mean over them against A's), the one with the best routed geometric mean over all cases wins if it
beats A's. The bar is asked of the routed cases, not of the whole mean: B 5 % faster on one case of eight
moves the mean by 0.6 %, under any fixed bar, while 5 % on one case is far outside its timing noise. The
routed cases must gain in B's own time too (A's median over B's, where both results have them): A and B were
timed in different evaluations, and a reference slowed more than the kernel by what else ran on the GPU then
raises a speedup with no faster kernel. On the H200, searches sharing the GPU moved a MoE router's speedup at
3 us by 10 % between kernels of the same time, and a split on each such gap shipped one kernel per case. The
child is A's file routing on the same byte count: one copy of the code with a launch table where the two
differ only in constants, else A's code and B's (names suffixed for when they run) behind a dispatcher
(evolution.mutators.crossover.source). Its real speedup is then the evaluator's to measure.

Chained (`chained()`, the run's last crossover: the best program against every case's leader), the child
takes every split that still gains, one after the other, each judged on the speedups the splits before it
predict; one split alone would take the partner of the largest gain over all cases and leave the others
out (on the H200, 256 tokens' leader in, 4096 tokens' two-pass kernel out).

The answer is a function of the parent and the inspirations it is shown: every refusal (and a child the run
has already seen, skipped through `seen` when the controller hands the run's duplicate check over) says the
parent is exhausted, so the controller stops offering it until the archive changes.

Input bytes come from the task's make_inputs run under torch's FakeTensorMode (shapes and dtypes, no memory);
when an input builder does not work with fake tensors the real CPU inputs are built once. Either way each
case is sized once per mutator (cached by task and case), never on a GPU.
"""

from __future__ import annotations

import ast
import copy
import itertools
import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

import libcst as cst

from evaluators.candidate import find_evolve_block
from evaluators.errors import CandidateError
from evaluators.result import EvalResult
from evaluators.stats import geometric_mean
from evaluators.task import Case, Task, load_captured
from evolution.dedup import candidate_sha
from evolution.mutators.base import ParentRewriter, child_problem, failed
from evolution.mutators.crossover.alike import body_key, jit_functions
from evolution.mutators.crossover.routes import flat_routes
from evolution.mutators.crossover.row_tile import row_tiled
from evolution.mutators.crossover.source import CrossoverError, Route, build_child
from evolution.types import MutationOutcome, MutationRequest, Program, case_speedups, case_times
from evolution.writers.fusion.blocks import BLOCK_PREFIX
from evolution.writers.fusion.writer import FusionWriter
from evolution.writers.inductor.compile_launches import kernel_kind

OPERATOR = "cross:bucket"
# The routed cases must beat the parent on them by 1 % as a group: less is within timing noise.
MIN_GAIN = 0.01
# A split whose child ships a kernel its parent does not (a second structure, where the routing flattened
# as integrate flattens it keeps two kernel bodies) must gain 5 % on the cases it routes: a reviewer reads
# every kernel a pull request adds, and a second body of a hundred lines for 1-4 % on some sizes does not
# pay for itself (a search of SGLang's SiLU-and-mul shipped three bodies, 214 lines, for gains below it).
# Except where it lifts a case on which the parent trails torch.compile (MutationRequest.behind_compile):
# there MIN_GAIN is enough, since a kernel behind compile on some size is one a maintainer turns down.
STRUCTURE_GAIN = 0.05


@dataclass(frozen=True)
class Split:
    partner: Program
    threshold: int  # bytes; cases of at most this size form the small side
    b_small: bool  # the partner runs the small side (else the large side)
    gain: float  # routed geometric mean / parent's geometric mean - 1, over every common case
    b_cases: tuple[str, ...]  # the cases routed to the partner
    # A band (b_small then True): the partner runs the cases above `floor` bytes up to `threshold`, the
    # parent those on both sides; None for a cut with the partner on one whole side.
    floor: int | None = None


def best_split(
    parent: dict[str, float],
    partner: Program,
    theirs: dict[str, float],
    sizes: dict[str, int],
    times: tuple[dict[str, float], dict[str, float]] = ({}, {}),
) -> Split | None:
    """The cut and side, or the band of middle sizes, with the largest routed gain over the parent, among the
    cases both were timed on and that have a size, of those whose routed cases gain MIN_GAIN as a group, in
    speedup and in the kernels' own `times` (parent's, partner's: µs per case, where both have them), and
    whose routed geometric mean beats the parent's; None when none qualifies (or they share no two cases of
    different sizes). A band wins only with more gain than every cut: it costs the child a second test.

    Why bands: a cut routes a whole side, so a middle size where the partner wins (a decode batch of 64
    tokens, between one token and the prefills, where it loses) stays with the parent. On the H100 a search
    of SGLang's SiLU-and-mul kept a kernel 1.7 % behind torch.compile at 64 x 2048 beside a launch of the
    same kernel 12 % faster there and slower on both sides (docs/results/2026-12-07-h100.md)."""
    common = sorted((n for n in parent if n in theirs and n in sizes), key=lambda n: (sizes[n], n))
    distinct = sorted({sizes[n] for n in common})
    if len(distinct) < 2:
        return None
    base = geometric_mean([parent[n] for n in common])
    best: Split | None = None

    def weigh(b_side: list[str]) -> float | None:
        """The routed gain over every common case of sending `b_side` to the partner; None where the
        routed cases do not gain MIN_GAIN as a group, in speedup and in own time."""
        if geometric_mean([theirs[n] / parent[n] for n in b_side]) < 1.0 + MIN_GAIN:
            return None
        if not _faster_in_time(b_side, *times):
            return None
        routed = geometric_mean([theirs[n] if n in b_side else parent[n] for n in common])
        return routed / base - 1.0

    for low, high in itertools.pairwise(distinct):
        small = [n for n in common if sizes[n] <= low]
        large = [n for n in common if sizes[n] > low]
        for b_small, b_side in ((True, small), (False, large)):
            gain = weigh(b_side)
            if gain is not None and gain > 0 and (best is None or gain > best.gain + 1e-12):
                best = Split(partner, _between(low, high), b_small, gain, tuple(b_side))
    for first, last in itertools.combinations_with_replacement(range(1, len(distinct) - 1), 2):
        band = [n for n in common if distinct[first] <= sizes[n] <= distinct[last]]
        gain = weigh(band)
        if gain is not None and gain > 0 and (best is None or gain > best.gain + 1e-12):
            floor = _between(distinct[first - 1], distinct[first])
            threshold = _between(distinct[last], distinct[last + 1])
            best = Split(partner, threshold, True, gain, tuple(band), floor=floor)
    return best


def _faster_in_time(cases: list[str], parent_us: dict[str, float], partner_us: dict[str, float]) -> bool:
    """The partner's own times beat the parent's by MIN_GAIN as a group on `cases`; True when either
    result lacks a time for one of them (a result without them cannot refuse)."""
    if not all(n in parent_us and n in partner_us for n in cases):
        return True
    return geometric_mean([parent_us[n] / partner_us[n] for n in cases]) >= 1.0 + MIN_GAIN


def kernel_bodies(source: str, entry: str) -> int:
    """The distinct kernels (`@triton.jit` functions other than the fusion writer's `_kb_` building blocks)
    of the candidate's EVOLVE-BLOCK with its size routing flattened as `kernelbot integrate` flattens it:
    constants that differ by size are a launch table, kernels alike but for their top-k method one kernel."""
    try:
        block = find_evolve_block(source)
    except CandidateError:
        return 0  # counted as fewer than any child has: a second body then has to earn STRUCTURE_GAIN
    text = block.text if block is not None else source
    return _distinct_kernels(flat_routes(text, entry) or text)


def _distinct_kernels(text: str) -> int:
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return 0
    return len(
        {body_key(fn) for name, fn in jit_functions(module).items() if not name.startswith(BLOCK_PREFIX)}
    )


def flat_child(source: str, entry: str) -> str | None:
    """The EVOLVE-BLOCK of a crossover child with its size routing flattened as `kernelbot integrate`
    flattens it (crossover.routes), or None where it does not flatten: the module would then carry each
    route's code as the child nests it, copies of one kernel among them, which `kernel_bodies` counts once."""
    try:
        block = find_evolve_block(source)
    except CandidateError:
        return None
    return None if block is None else flat_routes(block.text, entry)


def _between(low: int, high: int) -> int:
    """The geometric mean of two neighbouring sizes, strictly between them when integers allow it."""
    middle = round(math.sqrt(low * high))
    return min(max(middle, low + 1), high - 1) if high - low >= 2 else low


def tensor_bytes(args: Iterable[Any]) -> int:
    import torch

    return sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))


class BucketCrossoverMutator(ParentRewriter):
    name = OPERATOR
    description = "bucket crossover"
    needs_correct_parent = True  # routing a wrong parent's calls keeps it wrong on its share of them

    def __init__(
        self,
        seen: Callable[[str], bool] | None = None,
        *,
        chain: bool = False,
        writer: FusionWriter | None = None,
    ) -> None:
        self.seen = seen  # the run's duplicate check on Candidate.sha, when the controller provides it
        # The fusion writer whose traces write a one-row parent with the 2-D row tile when its partner takes
        # more rows a program (crossover.row_tile): one kernel then, not two.
        self.writer = writer
        # One split per child (the search's move), or every split that still gains, one after the other, in
        # one child (the run's last crossover: the parent meets each case's leader at once).
        self.chain = chain
        self._sizes: dict[tuple[str, str], int | None] = {}  # (task, case) -> input bytes (None: unsized)
        self._builders: dict[str, Callable[..., tuple[tuple, dict]]] = {}  # task root -> make_inputs
        self._lock = threading.Lock()  # mutate_source runs in worker threads, several at a time

    def chained(self) -> BucketCrossoverMutator:
        """This mutator routing every gaining split into one child, its size cache shared."""
        twin = copy.copy(self)
        twin.chain = True
        return twin

    def mutate_source(self, request: MutationRequest) -> MutationOutcome:
        parent, task = request.parent, request.task
        assert parent is not None
        refuse = partial(failed, OPERATOR, exhausted=True)  # the same parent and archive: the same answer
        regime = task.regime
        mine = case_speedups(parent.result, regime)
        if not parent.correct or not mine:
            return refuse(f"the parent has no per-case speedups in the {regime!r} regime to split on")
        partners = [
            (p, case_speedups(p.result, regime)) for p in request.inspirations if _usable(p, parent, task)
        ]
        partners = [(p, s) for p, s in partners if s]
        if not partners:
            return refuse(
                f"no inspiration to cross with: none is correct, timed per case in the {regime!r} regime, "
                f"different from the parent and defining {task.entry}() inside its EVOLVE-BLOCK",
            )
        names = {n for _, theirs in partners for n in theirs if n in mine}
        sizes = {n: b for n in names if (b := self.case_bytes(task, n, parent.result)) is not None}
        if len(set(sizes.values())) < 2:
            return refuse("the parent and its inspirations share no two cases of different input sizes")
        times = {p.id: case_times(p.result, regime) for p, _ in partners}
        measures = (mine, case_times(parent.result, regime))
        child, reason = self._route_splits(
            parent.source, measures, partners, times, sizes, task, request.behind_compile
        )
        if child is None:
            return refuse(reason)
        problem = child_problem(parent.source, child, task.entry)
        if problem is not None:  # a bug here, never the candidates' fault: say so rather than hide it
            return failed(
                OPERATOR,
                f"the crossover child is not a valid candidate: {problem}",
                exhausted=True,
                internal=True,
            )
        return MutationOutcome(operator=OPERATOR, child_source=child)

    def _route_splits(
        self,
        source: str,
        mine: tuple[dict[str, float], dict[str, float]],
        partners: list[tuple[Program, dict[str, float]]],
        times: dict[str, dict[str, float]],
        sizes: dict[str, int],
        task: Task,
        behind_compile: tuple[str, ...] = (),
    ) -> tuple[str | None, str]:
        """The parent's source routed to the partner of the best split (chained: to every split that still
        gains, one after the other) and "", or None and why nothing was routed. `mine` holds the parent's
        speedups and own times per case, `times` each partner's own times by program id.

        A chained step takes the speedups and times its routing predicts (the partner's on the cases it now
        runs, the code's before on the others) as the parent's of the next split, so each later split earns
        its 1 % on what the earlier ones left; the evaluator measures the child once, at the end. A second
        kernel body needs STRUCTURE_GAIN on the cases it routes, or MIN_GAIN on one of `behind_compile`
        (the cases where the parent trails torch.compile)."""
        reasons: list[str] = []
        entry = task.entry
        Measures = tuple[dict[str, float], dict[str, float]]
        taken: list[tuple[str, Route]] = []  # the codes routed to so far (chained), each with its route

        def routed_with(current: str, partner: str, route: Route) -> str:
            """`current` (the parent routed to every partner taken so far) routed to `partner`, a plain
            one-row code written in the row tile where another takes more rows a program
            (crossover.row_tile), so that one kernel serves both whichever came first: built again from
            the parent and every partner where the tile rewrote one taken before."""
            steps = [*taken, (partner, route)]
            before = [source, *(p for p, _ in taken)]
            *earlier, partner_code = row_tiled([*before, partner], task, self.writer)
            if earlier == before:
                return build_child(current, partner_code, entry, route)
            made, *partners_code = [*earlier, partner_code]
            for code, (_, step_route) in zip(partners_code, steps, strict=True):
                made = build_child(made, code, entry, step_route)
            return made

        Steps = list[tuple[str, Route]]  # (the code routed to, its route), in the order built

        def banded(current: str, made: str, split: Split, route: Route) -> tuple[str, Steps]:
            """`made` (`current` routed to the split's partner by `route`) with the sizes up to a band's
            floor sent back to `current`, and the routing steps taken: a band is two of them. (Where a
            later step's row tile rebuilds the child from every step, the way back goes to `current` as
            it was: the same outputs, its one-row code perhaps left out of the tile.)"""
            steps = [(split.partner.source, route)]
            if split.floor is None:
                return made, steps
            back = Route(split.floor, True, f"Cases up to {split.floor} bytes run the code before the band.")
            return build_child(made, current, entry, back), [*steps, (current, back)]

        def next_split(current: str, mine: Measures) -> tuple[str, Measures, Steps] | None:
            """`current` (the parent routed to the partners taken so far) routed by the best split that can
            be built, the speedups and times the routing predicts, and the routing steps taken (the partner
            and its route; a band adds the way back to `current` below it)."""
            speedups, own = mine
            splits = [
                (split, theirs)
                for p, theirs in partners
                if (split := best_split(speedups, p, theirs, sizes, (own, times[p.id])))
            ]
            splits.sort(key=lambda st: -st[0].gain)  # stable: ties keep the inspirations' order (best first)
            splits = readable_first(splits, speedups)
            for split, theirs in splits:
                route = _route(split, speedups, theirs)
                try:  # the best partner first; one whose code cannot be combined gives way to the next
                    made = routed_with(current, split.partner.source, route)
                    made, steps_taken = banded(current, made, split, route)
                except CrossoverError as exc:
                    reasons.append(f"{split.partner.id}: {exc}")
                    continue
                flat = flat_child(made, entry)  # flattened once: both checks below read it
                if flat is None:
                    reasons.append(
                        f"{split.partner.id}: the routed child's size routing does not flatten into one "
                        "dispatcher (integrate would ship its nested copies)"
                    )
                    continue
                if not self.chain and self.seen is not None and self.seen(candidate_sha(made, entry)):
                    reasons.append(f"{split.partner.id}: the routed child was already proposed")
                    continue
                routed_gain = geometric_mean([theirs[n] / speedups[n] for n in split.b_cases]) - 1.0
                lifts = any(
                    n in behind_compile and theirs[n] >= speedups[n] * (1.0 + MIN_GAIN) for n in split.b_cases
                )
                if (
                    routed_gain < STRUCTURE_GAIN
                    and not lifts
                    and _distinct_kernels(flat) > kernel_bodies(current, entry)
                ):
                    reasons.append(
                        f"{split.partner.id}: a second kernel body for {routed_gain:.1%} on the cases it "
                        f"routes (at least {STRUCTURE_GAIN:.0%}, or {MIN_GAIN:.0%} on a case behind "
                        "torch.compile)"
                    )
                    continue
                partner_own = times[split.partner.id]
                return (
                    made,
                    (
                        {n: theirs[n] if n in split.b_cases else s for n, s in speedups.items()},
                        {n: partner_own.get(n, t) if n in split.b_cases else t for n, t in own.items()},
                    ),
                    steps_taken,
                )
            return None

        routed, steps = source, 0
        while steps <= 2 * len(partners):  # every step gains on some case; bounded all the same
            step = next_split(routed, mine)
            if step is None:
                break
            routed, mine, steps_taken = step
            taken.extend(steps_taken)
            steps += 1
            if not self.chain:
                break
        if steps and self.seen is not None and self.seen(candidate_sha(routed, entry)):
            return None, "the routed child was already proposed"
        if steps:
            return routed, ""
        if reasons:
            return None, "cannot combine the parent with an inspiration that gains: " + "; ".join(reasons)
        return None, (
            f"no size split beats the parent by {MIN_GAIN:.0%} on the cases it routes (in speedup and in "
            "the kernel's own time) without losing on the whole"
        )

    def case_bytes(self, task: Task, name: str, result: EvalResult | None) -> int | None:
        """Bytes of the tensor inputs of case `name` (a listed case, or one known from `result`)."""
        key = (task.name, name)
        with self._lock:
            if key in self._sizes:
                return self._sizes[key]
        case = next((c for c in task.cases if c.name == name), None)
        if case is None and result is not None:
            case = next((Case(c.name, c.params) for c in result.cases if c.name == name), None)
        size = self._measure(task, case) if case is not None else None
        with self._lock:
            self._sizes[key] = size
        return size

    def _measure(self, task: Task, case: Case) -> int | None:
        def build() -> tuple[tuple, dict]:
            if case.captured is not None:
                return load_captured(case.captured, "cpu")
            with self._lock:
                make = self._builders.get(str(task.root))
                if make is None:  # import inputs.py once per task, not once per case
                    make = self._builders[str(task.root)] = task.load_make_inputs()
            return make(dict(case.params), 0, "cpu")

        try:
            from torch._subclasses.fake_tensor import FakeTensorMode

            with FakeTensorMode(allow_non_fake_inputs=True):
                args, kwargs = build()
            return tensor_bytes([*args, *kwargs.values()])
        except Exception:  # the builder needs real values (.item(), data-dependent shapes): build them once
            pass
        try:
            args, kwargs = build()
        except Exception:  # a case the task cannot build is left out of the split, not fatal
            return None
        return tensor_bytes([*args, *kwargs.values()])


def readable_first(
    splits: list[tuple[Split, dict[str, float]]], speedups: dict[str, float]
) -> list[tuple[Split, dict[str, float]]]:
    """`splits` (best first, each with its partner's speedups) with the splits to partners written without
    torch.compile's kernels moved first where they lose no case to the best split by MIN_GAIN, the noise
    a gain must clear. Such a partner is the fusion writer's kernel with Inductor's structure taken over
    (fusion:inductor), beside the Inductor-seeded code it was taken from (tune:compile): on a 4096-token
    RMSNorm the two time alike, and whichever won by a fraction of the noise shipped. The child's module is
    what a reviewer reads, and Inductor's code in it costs them: crossed with the fusion kernel for small
    inputs, SGLang's RMSNorm became a module of 247 lines with Inductor's numbered values and bookkeeping
    (the budget is 200), the fusion writer's two-pass kernel in its place one of 192."""
    if not splits or not inductor_written(splits[0][0].partner.source):
        return splits
    best = _predicted(speedups, *splits[0])

    def ties(split: Split, theirs: dict[str, float]) -> bool:
        predicted = _predicted(speedups, split, theirs)
        return all(predicted[n] * (1.0 + MIN_GAIN) >= best[n] for n in best)

    readable = [st for st in splits if not inductor_written(st[0].partner.source) and ties(*st)]
    return [*readable, *(st for st in splits if not any(st is r for r in readable))]


def _predicted(speedups: dict[str, float], split: Split, theirs: dict[str, float]) -> dict[str, float]:
    """The speedup per case the routing of `split` predicts: the partner's on the cases it runs."""
    return {n: theirs[n] if n in split.b_cases else s for n, s in speedups.items()}


def inductor_written(source: str) -> bool:
    """Whether the candidate's EVOLVE-BLOCK holds a kernel written from torch.compile's code (a kernel
    named as Inductor or the Inductor seed names its kinds)."""
    try:
        block = find_evolve_block(source)
        tree = ast.parse(block.text if block is not None else source)
    except (CandidateError, SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.FunctionDef) and kernel_kind(node.name) != "other" for node in tree.body)


def _usable(program: Program, parent: Program, task: Task) -> bool:
    if not program.correct or program.sha == parent.sha or program.id == parent.id:
        return False
    try:
        block = find_evolve_block(program.source)
        tree = ast.parse(block.text) if block is not None else None
    except (CandidateError, SyntaxError, ValueError):
        return False
    return tree is not None and any(
        isinstance(node, ast.FunctionDef) and node.name == task.entry for node in tree.body
    )


def _route(split: Split, parent: dict[str, float], theirs: dict[str, float]) -> Route:
    side = "up to" if split.b_small else "above"
    if split.floor is not None:
        side = f"above {split.floor} and up to"
    shown = ", ".join(f"{n} ({theirs[n]:.2f}x vs {parent[n]:.2f}x)" for n in split.b_cases)
    # The measurements that justify the threshold, not the search's bookkeeping (program ids and shas are
    # in the run's store): this comment ships with the kernel.
    why = (
        f"Cases {side} {split.threshold} bytes ran faster with B as a group, speedup B vs the other code: "
        f"{shown}; routed geometric mean {split.gain:+.1%}."
    )
    return Route(split.threshold, split.b_small, why)
