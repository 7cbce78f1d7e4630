"""Small pieces every mutation operator shares: a failed outcome, the check that a child is a valid
candidate that changed nothing outside its parent's EVOLVE-BLOCK, and the frame of the operators that
rewrite a parent's source on the host (no LLM)."""

from __future__ import annotations

import abc

from evaluators.candidate import check_evolve_block, parse_candidate
from evaluators.errors import CandidateError
from evolution.source_work import in_source_thread
from evolution.types import MutationOutcome, MutationRequest, TokenUsage


def failed(
    operator: str,
    error: str,
    *,
    prompt: str | None = None,
    response: str | None = None,
    usage: TokenUsage | None = None,
    exhausted: bool = False,
    internal: bool = False,
) -> MutationOutcome:
    """An outcome with no child; `error` says why (it is stored and shown: one clear sentence).
    `exhausted`: asking again for this parent can only give the same answer; `internal`: a kernelbot bug."""
    return MutationOutcome(
        operator=operator,
        child_source=None,
        prompt=prompt,
        response=response,
        usage=usage or TokenUsage(),
        error=error,
        exhausted=exhausted,
        internal=internal,
    )


def child_problem(parent_source: str, child_source: str, entry: str) -> str | None:
    """None when `child_source` parses, defines `entry` and keeps the parent's code outside the block;
    else the reason it does not."""
    try:
        parse_candidate(child_source, entry)
        check_evolve_block(parent_source, child_source)
    except CandidateError as exc:
        return str(exc)
    return None


class ParentRewriter(abc.ABC):
    """An operator that only rewrites an existing parent (it cannot write a first candidate). The rewrite
    (`mutate_source`) is CPU work in plain Python, so it runs in a worker thread, off the event loop."""

    name: str
    description: str  # "launch tuning": how the refusal without a parent names the operator

    def can_seed(self) -> bool:
        return False

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        if request.parent is None:
            return failed(
                self.name, f"{self.description} needs a parent candidate (it cannot write a first one)"
            )
        return await in_source_thread(self.mutate_source, request)

    @abc.abstractmethod
    def mutate_source(self, request: MutationRequest) -> MutationOutcome:
        """The child of `request.parent` (never None here), or a failed outcome saying why there is none."""
