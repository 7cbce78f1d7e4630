"""Shapes shared inside the search: a Program in the population, and what a mutation operator gets and gives.

The store, archive, sampling and controller speak Program; every mutation operator (LLM, Inductor seed,
launch-parameter tuning) satisfies the Mutator protocol, so the controller treats them alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from evaluators.result import EvalResult, Hardware, RegimeTiming
from evaluators.task import Task


@dataclass(frozen=True)
class Program:
    id: str
    source: str
    sha: str  # evaluators.candidate.Candidate.sha: equal normalised code, equal sha
    parent_id: str | None
    operator: str  # "seed:file", "seed:inductor", "llm:<model>", "tune:launch", "migration"
    island: int
    iteration: int
    result: EvalResult | None = None
    features: dict[str, float] = field(default_factory=dict)
    created_at: float = 0.0

    @property
    def score(self) -> float:
        return self.result.score if self.result is not None else 0.0

    @property
    def correct(self) -> bool:
        return self.result is not None and self.result.correct and not self.result.hacks


def case_speedups(result: EvalResult | None, regime: str) -> dict[str, float]:
    """Speedup over the reference per listed case timed in `regime` (hidden cases are never timed)."""
    return _per_case(result, regime, lambda timing: timing.speedup)


def case_times(result: EvalResult | None, regime: str) -> dict[str, float]:
    """The candidate's own median time (µs) per listed case timed in `regime`."""
    return _per_case(result, regime, lambda timing: timing.candidate.median_us)


def _per_case(
    result: EvalResult | None, regime: str, value: Callable[[RegimeTiming], float]
) -> dict[str, float]:
    """`value` of each listed case's timing in `regime`, where it is a positive finite number."""
    if result is None:
        return {}
    values: dict[str, float] = {}
    for case in result.cases:
        timing = case.timings.get(regime)
        if not case.hidden and timing is not None and (v := value(timing)) > 0 and math.isfinite(v):
            values[case.name] = v
    return values


@dataclass(frozen=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
        )


@dataclass(frozen=True)
class MutationRequest:
    task: Task
    parent: Program | None  # None asks a seeding operator for a first candidate
    inspirations: tuple[Program, ...] = ()
    hardware: Hardware = field(default_factory=Hardware)
    island: int = 0
    iteration: int = 0
    # The cases where the parent is slower than torch.compile side by side (evolution.compile_check; the
    # final crossover's request): a crossover may add a second kernel body for less where it lifts one.
    behind_compile: tuple[str, ...] = ()


@dataclass(frozen=True)
class MutationOutcome:
    operator: str
    child_source: str | None  # None when the operator produced nothing usable (see error)
    prompt: str | None = None  # LLM operators: what was sent (never contains secrets)
    response: str | None = None  # LLM operators: the raw answer, kept even when malformed
    usage: TokenUsage = field(default_factory=TokenUsage)
    error: str = ""  # why no child: malformed answer, endpoint failure after retries, nothing to tune...
    # This operator has nothing new to propose for this parent (given the archive it was shown): asking
    # again can only repeat the answer. The controller stops picking the pair, and stops the run when no
    # operator has a parent left.
    exhausted: bool = False
    # The failure is kernelbot's own (an exception in our code, a conversion bug on a valid reference), not
    # the input's: a run left with nothing to mutate ends as a crash (exit 3), not as a user error.
    internal: bool = False


class Mutator(Protocol):
    name: str

    def can_seed(self) -> bool:
        """True when mutate() accepts parent=None (it can write a first candidate from the reference)."""
        ...

    async def mutate(self, request: MutationRequest) -> MutationOutcome: ...
