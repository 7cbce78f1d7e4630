"""When a search stops: iterations, wall time, token/cost budget, plateau, an exhausted operator set, or (when
asked) a correct candidate on a backend that cannot time."""

from __future__ import annotations

import time
from typing import Any

from evaluators.result import EvalResult
from evolution.config import StopConfig
from evolution.store import RunStore
from evolution.types import TokenUsage


class StopRules:
    def __init__(self, config: StopConfig, store: RunStore, *, started_iterations: int = 0) -> None:
        self.config = config
        self._t0 = time.monotonic()
        self.evaluations_this_session = 0
        # Persisted, so a resumed run keeps counting toward its plateau.
        self.since_improvement = int(store.state("evals_since_improvement", 0))
        self.no_child_streak = 0
        self.started_iterations = started_iterations
        # A correct candidate that was not timed has been found (persisted like the plateau count).
        self.correct_untimed = bool(store.state("correct_untimed", False))

    def reason(self, iterations: int, tokens: TokenUsage) -> str:
        """Why the search should start no more mutations ("" to go on)."""
        c = self.config
        if iterations >= c.iterations:
            return f"iterations: {iterations} mutation attempts reached the limit of {c.iterations}"
        if c.time_limit_s is not None and self.elapsed() >= c.time_limit_s:
            return f"time limit: {self.elapsed():.0f}s of {c.time_limit_s:.0f}s"
        used = tokens.prompt_tokens + tokens.completion_tokens
        if c.max_tokens is not None and used >= c.max_tokens:
            return f"token budget: {used} tokens used of {c.max_tokens}"
        if c.max_cost_usd is not None and tokens.cost_usd >= c.max_cost_usd:
            return f"cost budget: {format_usd(tokens.cost_usd)} spent of {format_usd(c.max_cost_usd)}"
        if c.untimed_correct and self.correct_untimed:
            return "untimed: a candidate is correct and the backend does not time, so none can rank higher"
        if c.plateau is not None and self.since_improvement >= c.plateau:
            return f"plateau: {self.since_improvement} evaluations without a better program"
        if self.no_child_streak >= c.exhausted:
            return f"exhausted: {self.no_child_streak} mutation attempts in a row produced no new candidate"
        return ""

    def attempted(self, *, produced: bool) -> None:
        self.no_child_streak = 0 if produced else self.no_child_streak + 1

    def evaluated(self, improved: bool, result: EvalResult | None = None) -> None:
        self.evaluations_this_session += 1
        self.since_improvement = 0 if improved else self.since_improvement + 1
        if result is not None and result.passed and not result.hacks and result.speedup is None:
            self.correct_untimed = True  # correct, and the backend gave no speedup: it does not time

    def checkpoint(self) -> dict[str, Any]:
        return {"evals_since_improvement": self.since_improvement, "correct_untimed": self.correct_untimed}

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def seconds_left(self) -> float | None:
        if self.config.time_limit_s is None:
            return None
        return max(0.05, self.config.time_limit_s - self.elapsed())


def format_usd(value: float) -> str:
    """Dollars as a user reads them: cents above a dollar, four decimals below (a run of cheap requests)."""
    return f"${value:,.2f}" if abs(value) >= 1 else f"${value:.4f}"
