"""Before the final crossover: the run's best program timed against torch.compile of the reference, in one
worker, pair by pair (the evaluator's "compile" baseline), and the cases where it is slower.

Why: the search scores against eager PyTorch, and a kernel behind torch.compile on some size is one a
maintainer turns down. The population often holds what closes the gap: on an H100 a 60 s search of SGLang's
SiLU-and-mul kept a fusion kernel 1.7 % behind compile at 64 x 2048 while another program was 3.9 % faster
on the small cases, and the final crossover refused it, a second kernel body being worth 5 % there
(evolution.mutators.bucket_crossover.STRUCTURE_GAIN). Told which cases trail compile, the crossover takes a
second body for less where it lifts one of them; the final comparison then keeps the child only where it is
faster side by side (evolution.final_comparison, which takes a smaller gain on those cases too).

One evaluation more, where a final crossover can run at all; none under Triton's interpreter, whose times
say nothing of a GPU. The figures are those of a final comparison's duel (the program against compile) and
are kept in the run's store (state COMPILE_STATE, `record`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from evolution.final_comparison import Duel

COMPILE_STATE = "compile_check"
UNTIMED_BACKENDS = ("triton-interpret",)


def behind(figures: Duel) -> tuple[str, ...]:
    """The cases where the program is slower than torch.compile with its whole interval below 1."""
    return tuple(c for c, s in figures.speedups.items() if s < 1.0 and figures.ci_high.get(c, 1.0) < 1.0)


def record(figures: Duel) -> dict[str, Any]:
    """What the store keeps (JSON): the duel as a final comparison keeps each of its own (the program timed,
    `challenger`; compile's time over its own per case, with the interval's ends; or why there are no
    figures) and the cases behind."""
    return {**asdict(figures), "behind": list(behind(figures))}
