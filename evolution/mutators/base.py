"""Small pieces every mutation operator shares: a failed outcome, and the check that a child is a valid
candidate that changed nothing outside its parent's EVOLVE-BLOCK."""

from __future__ import annotations

from evaluators.candidate import check_evolve_block, parse_candidate
from evaluators.errors import CandidateError
from evolution.types import MutationOutcome, TokenUsage


def failed(
    operator: str,
    error: str,
    *,
    prompt: str | None = None,
    response: str | None = None,
    usage: TokenUsage | None = None,
) -> MutationOutcome:
    """An outcome with no child; `error` says why (it is stored and shown: one clear sentence)."""
    return MutationOutcome(
        operator=operator,
        child_source=None,
        prompt=prompt,
        response=response,
        usage=usage or TokenUsage(),
        error=error,
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
