"""fusion:variant — a parent the fusion generator wrote, regenerated with one knob changed (rows per program,
whole rows or blocks, grid axes, a persistent grid, num_warps, eviction hints, 16-bit rounding, the top-k
method; see evolution.writers.fusion.knobs).

The knobs come from the parent's header line; the moves are every one-step change of one knob, in a fixed
order. A knob set already proposed for the task, or one whose code the run already knows, is never proposed
again; when none is left for the parent the outcome says `exhausted`, which tells the controller to stop
asking for this parent.
"""

from __future__ import annotations

from collections.abc import Callable

from evaluators.candidate import find_evolve_block, replace_evolve_block
from evolution.dedup import candidate_sha
from evolution.mutators.base import child_problem, failed
from evolution.types import MutationOutcome, MutationRequest
from evolution.writers.fusion.generate import GenerationError
from evolution.writers.fusion.knobs import neighbours, parse
from evolution.writers.fusion.writer import FusionWriter

OPERATOR = "fusion:variant"


class FusionVariantMutator:
    name = OPERATOR
    # Another top-k method or rounding can change a wrong kernel's results (which of tied experts it picks);
    # a parent that did not build or run says nothing about the knobs, so it needs one that ran.
    needs_compiled_parent = True
    exhaustion_ignores_inspirations = True  # the moves depend on the parent alone

    def __init__(self, writer: FusionWriter | None = None, seen: Callable[[str], bool] | None = None) -> None:
        self.writer = writer or FusionWriter()
        self.seen = seen  # the run's duplicate check on Candidate.sha, when the controller provides it

    def can_seed(self) -> bool:
        return False

    def accepts(self, source: str) -> bool:
        """Only what the fusion generator wrote: its knobs are read from the header line it leaves."""
        return parse(source) is not None

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        parent = request.parent
        if parent is None:
            return failed(OPERATOR, "fusion variants need a parent candidate (they cannot write a first one)")
        knobs = parse(parent.source)
        if knobs is None:
            return _exhausted("the parent was not written by the fusion generator (no fusion-knobs line)")
        task = request.task
        report = await self.writer.report(task)
        if report.error:
            return _exhausted(f"the reference no longer traces: {report.error}")
        entry = task.entry
        for move in neighbours(knobs, uses_topk=self.writer.uses_selection(report)):
            if not self.writer.claim(task, move):
                continue
            try:
                generated = await self.writer.write(task, report, move)
            except GenerationError:
                continue  # this knob set has no kernel for the reference; the next may
            child = in_parent(parent.source, generated.source)
            sha = candidate_sha(child, entry)
            if sha == candidate_sha(parent.source, entry) or (self.seen is not None and self.seen(sha)):
                continue  # the knob changes nothing here (e.g. rows on a kernel without a row grid)
            problem = child_problem(parent.source, child, entry)
            if problem is not None:
                return failed(OPERATOR, f"the variant is not a valid child: {problem}")
            return MutationOutcome(operator=OPERATOR, child_source=child)
        return _exhausted("every one-knob variant of this parent was already proposed for the task")


def in_parent(parent: str, generated: str) -> str:
    """The generated EVOLVE-BLOCK inside the parent's own frame (its header may come from another torch)."""
    block = find_evolve_block(generated)
    if block is None or find_evolve_block(parent) is None:
        return generated
    return replace_evolve_block(parent, block.text)


def _exhausted(why: str) -> MutationOutcome:
    return MutationOutcome(OPERATOR, None, error=f"fusion variant: {why}", exhausted=True)
