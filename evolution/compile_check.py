"""Before the final crossover: the run's best program timed against torch.compile of the reference, in one
worker, pair by pair (the evaluator's "compile" baseline), and the cases where it is slower.

Why: the search scores against eager PyTorch, and a kernel behind torch.compile on some size is one a
maintainer turns down. The population often holds what closes the gap: on an H100 a 60 s search of SGLang's
SiLU-and-mul kept a fusion kernel 1.7 % behind compile at 64 x 2048 while another program was 3.9 % faster
on the small cases, and the final crossover refused it, a second kernel body being worth 5 % there
(evolution.mutators.bucket_crossover.STRUCTURE_GAIN). Told which cases trail compile, the crossover takes a
second body for less where it lifts one of them; the final comparison then keeps the child only where it is
faster side by side (evolution.final_comparison).

One evaluation more, where a final crossover can run at all; none under Triton's interpreter, whose times
say nothing of a GPU. The figures are kept in the run's store (state COMPILE_STATE).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from evaluators.result import EvalResult
from evolution.types import Program, case_speedups

COMPILE_STATE = "compile_check"
UNTIMED_BACKENDS = ("triton-interpret",)


@dataclass(frozen=True)
class Standing:
    """The program `program` against torch.compile, per case: compile's time over the program's (> 1: the
    program is faster) and the upper end of its interval; `reason` says why there are no figures."""

    program: str  # program id
    speedups: dict[str, float]
    ci_high: dict[str, float]
    reason: str = ""

    def behind(self) -> tuple[str, ...]:
        """The cases where the program is slower than torch.compile with its whole interval below 1."""
        return tuple(c for c, s in self.speedups.items() if s < 1.0 and self.ci_high.get(c, 1.0) < 1.0)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "behind": list(self.behind())}


def standing(program: Program, result: EvalResult, regime: str) -> Standing:
    """The figures of `program`'s evaluation against torch.compile (TimingConfig baseline "compile")."""
    if not (result.passed and result.correct):
        return Standing(program.id, {}, {}, reason=result.reason or "not timed")
    speedups = case_speedups(result, regime)
    highs = {case.name: case.timings[regime].ci_high for case in result.cases if case.name in speedups}
    return Standing(program.id, speedups, highs, reason="" if speedups else "no case timed")
