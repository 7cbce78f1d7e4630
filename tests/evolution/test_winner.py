"""The program a run ships: the fittest, or a much shorter program tied with it on every case."""

from __future__ import annotations

import dataclasses
import math

from evaluators.result import CaseResult, EvalResult, RegimeTiming, Stage, TimingStats
from evolution.types import Program
from evolution.winner import SHORTER, TIE, run_winner, tied_with


def kernel_source(kernels: int) -> str:
    """A source of `kernels` jit functions of five lines each (line counts are what the rule compares)."""
    blocks = [
        f"@triton.jit\ndef _k{i}(x_ptr, N: tl.constexpr):\n    offs = tl.arange(0, N)\n"
        f"    x = tl.load(x_ptr + offs)\n    tl.store(x_ptr + offs, x * {i + 2})\n"
        for i in range(kernels)
    ]
    return "import triton\nimport triton.language as tl\n\n" + "\n\n".join(blocks)


def measured(
    pid: str, source: str, times: dict[str, tuple[float, float]], *, correct: bool = True
) -> Program:
    """A program timed in the graph regime: per case (reference µs, kernel µs) as its evaluation saw them."""
    cases = tuple(
        CaseResult(
            name,
            {},
            correct,
            timings={
                "graph": RegimeTiming(
                    TimingStats(ref, 0.01, 30), TimingStats(own, 0.01, 30), ref / own, ref / own, ref / own
                )
            },
        )
        for name, (ref, own) in times.items()
    )
    score = math.prod(ref / own for ref, own in times.values()) ** (1 / len(times))
    result = EvalResult(
        "t", pid, "triton-cuda", "graph", Stage.TIMING, correct, correct=correct, score=score, cases=cases
    )
    return Program(pid, source, pid, None, "op", 0, 0, result)


# A MoE router as five searches sharing an H200 timed it (µs): the three-kernel crossover child scored 7 %
# above its one-kernel parent because its evaluation's reference ran slower, while its own times were
# slower on every case.
ONE_KERNEL = {"t1": (47.69, 3.53), "t32": (54.56, 3.69), "t512": (74.11, 4.03), "t4096": (182.87, 11.95)}
THREE_KERNELS = {"t1": (49.71, 3.73), "t32": (59.82, 3.92), "t512": (79.96, 4.20), "t4096": (228.90, 12.10)}


def test_a_shorter_program_as_fast_on_every_case_is_the_winner() -> None:
    routed = measured("routed", kernel_source(9), THREE_KERNELS)
    single = measured("single", kernel_source(3), ONE_KERNEL)
    assert routed.score > 1.05 * single.score  # the fittest by score ...
    assert run_winner([routed, single]) is single  # ... but no case shows it faster in both measures


def test_a_case_faster_in_both_measures_keeps_the_fittest() -> None:
    # The longer program is 5 % faster on the largest case in its own time and in speedup: a real gain.
    faster = {**ONE_KERNEL, "t4096": (182.87, 11.95 / 1.05)}
    routed = measured("routed", kernel_source(9), faster)
    single = measured("single", kernel_source(3), ONE_KERNEL)
    assert not tied_with(single, routed)
    assert run_winner([single, routed]) is routed


def test_within_the_tie_in_either_measure() -> None:
    best = measured("best", kernel_source(9), {"a": (100.0, 10.0)})
    # 1 % slower in its own time, 5 % lower in speedup (a faster reference in its evaluation): tied.
    slower_reference = measured("b", kernel_source(3), {"a": (100.0 / 1.04, 10.0 * 1.01)})
    assert tied_with(slower_reference, best)
    # 3 % slower in its own time, same speedup (the whole GPU slower then): tied.
    slower_gpu = measured("c", kernel_source(3), {"a": (103.0, 10.3)})
    assert tied_with(slower_gpu, best)
    # Behind by more than TIE in both: not tied.
    behind = measured("d", kernel_source(3), {"a": (100.0, 10.0 * (1 + 2 * TIE))})
    assert not tied_with(behind, best)
    # A case the fittest was timed on and the other was not: not tied.
    missing = measured("e", kernel_source(3), {"b": (100.0, 10.0)})
    assert not tied_with(missing, best)


def test_only_a_much_shorter_program_replaces_the_fittest() -> None:
    best = measured("best", kernel_source(4), {"a": (100.0, 10.0)})
    # As fast but only one kernel of four shorter (more than SHORTER of the lines): the fittest stays.
    assert SHORTER < 0.8
    nearly = measured("nearly", kernel_source(3), {"a": (100.0, 10.0)})
    assert run_winner([best, nearly]) is best
    # Among several tied, much shorter programs, the shortest.
    two = measured("two", kernel_source(2), {"a": (99.0, 10.0)})
    one = measured("one", kernel_source(1), {"a": (98.5, 10.0)})
    assert run_winner([best, nearly, two, one]) is one


def changed(program: Program, **fields: object) -> Program:
    """`program` with its result's `fields` replaced."""
    assert program.result is not None
    return dataclasses.replace(program, result=dataclasses.replace(program.result, **fields))  # type: ignore[arg-type]


def test_untimed_results_and_failures() -> None:
    # A backend that never times (the CPU interpreter) gives no per-case speedups: the fittest by score.
    long = changed(measured("long", kernel_source(6), {"a": (100.0, 10.0)}), cases=(), score=1.2)
    short = changed(measured("short", kernel_source(1), {"a": (100.0, 10.0)}), cases=(), score=1.0)
    assert run_winner([long, short]) is long
    # Incorrect and quarantined programs are never the winner, nor the fittest it is tied with.
    wrong = measured("wrong", kernel_source(1), {"a": (100.0, 1.0)}, correct=False)
    flagged = changed(measured("flagged", kernel_source(1), {"a": (100.0, 1.0)}), quarantined=True)
    assert run_winner([wrong, flagged]) is None
    assert run_winner([wrong, flagged, long]) is long
