"""seed:fusion — a first candidate written by the fusion generator: one Triton kernel per specialisation from
the reference's traced ATen graph (evolution.writers.fusion). No LLM and no hand-written candidate: where
Inductor stops (a top-k, a prefix sum, an in-place gather) this still writes a pure-Triton kernel.

A reference the generator does not write is refused with one sentence naming the op or construct; every later
call for that task gives the same sentence without tracing again.
"""

from __future__ import annotations

from evolution.mutators.base import failed
from evolution.types import MutationOutcome, MutationRequest
from evolution.writers.fusion.generate import GenerationError
from evolution.writers.fusion.knobs import Knobs, neighbours
from evolution.writers.fusion.writer import FusionWriter

OPERATOR = "seed:fusion"


class FusionSeedMutator:
    name = OPERATOR

    def __init__(self, writer: FusionWriter | None = None) -> None:
        self.writer = writer or FusionWriter()

    def can_seed(self) -> bool:
        return True

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        if request.parent is not None:
            return failed(OPERATOR, "the fusion seed only writes first candidates (it takes no parent)")
        task = request.task
        report = await self.writer.report(task)
        if report.error:
            return failed(OPERATOR, f"fusion seed: {report.error}")
        default = Knobs()
        # A second seeding call (seed_attempts > 1, or a resumed run) writes a neighbour instead of a repeat.
        choices = [default, *neighbours(default, uses_topk=self.writer.uses_selection(report))]
        for knobs in choices:
            if not self.writer.claim(task, knobs):
                continue
            try:
                generated = await self.writer.write(task, report, knobs)
            except GenerationError as exc:
                return failed(OPERATOR, f"fusion seed: {exc}")
            return MutationOutcome(operator=OPERATOR, child_source=generated.source)
        return MutationOutcome(
            OPERATOR, None, error="fusion seed: every starting knob set was already written", exhausted=True
        )
