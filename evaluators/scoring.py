"""One number per candidate: the geometric mean of its per-case speedups in the task's regime, with a CI,
and the hack check that needs all cases at once (class 14: a single case drives the aggregate).

The score is what the search maximises: the aggregate speedup for a correct, unflagged candidate; 0 for a
candidate that failed any case or was flagged by any stage; 1.0 when nothing was timed (the interpreter
backend checks correctness only, so a correct candidate there is "as good as the reference").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from evaluators import stats
from evaluators.result import CaseResult, HackFinding, Hardware, RegimeTiming
from evaluators.task import Task

UNTIMED_SCORE = 1.0


@dataclass(frozen=True)
class Aggregate:
    speedup: float | None  # geometric mean over timed cases in the task's regime; None if nothing was timed
    ci: tuple[float, float] | None
    score: float
    findings: list[HackFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. a case scored in the other regime, and why

    @property
    def real(self) -> bool:
        """The aggregate speedup is real only when its CI's lower end exceeds 1."""
        return self.ci is not None and self.ci[0] > 1.0


def _case_timing(case: CaseResult, regime: str, notes: list[str]) -> RegimeTiming | None:
    if regime in case.timings:
        return case.timings[regime]
    others = [r for r in ("graph", "wall") if r != regime and r in case.timings]
    if others:
        notes.append(f"case {case.name!r} has no {regime} timing; its {others[0]} timing is used instead")
        return case.timings[others[0]]
    return None


def _estimate(timing: RegimeTiming) -> tuple[float, float, float] | None:
    values = (timing.speedup, timing.ci_low, timing.ci_high)
    if not all(math.isfinite(v) and v > 0 for v in values):
        return None
    lo, hi = min(timing.ci_low, timing.speedup), max(timing.ci_high, timing.speedup)
    return timing.speedup, lo, hi


def single_case_finding(
    names: Sequence[str], estimates: Sequence[tuple[float, float, float]]
) -> HackFinding | None:
    """Class 14: the aggregate is a real speedup (CI above 1) but without one case the rest is a slowdown."""
    if len(estimates) < 2:
        return None
    full, full_lo, _ = stats.geometric_mean_ci(estimates)
    if not (full > 1.0 and full_lo > 1.0):
        return None
    for name, (without, _, _) in zip(names, stats.leave_one_out_geometric_means(estimates), strict=True):
        if without < 1.0:
            listing = ", ".join(f"{n}: {e[0]:.3f}x" for n, e in zip(names, estimates, strict=True))
            return HackFinding(
                kind="single_case_aggregate",
                evidence=(
                    f"geometric-mean speedup {full:.3f}x over {len(estimates)} cases drops to {without:.3f}x "
                    f"without case {name!r}; per-case speedups: {listing}"
                ),
            )
    return None


def aggregate(
    task: Task,
    cases: Sequence[CaseResult],
    hardware: Hardware,
    prior_findings: Sequence[HackFinding] = (),
    *,
    single_case_check: bool = True,
) -> Aggregate:
    """Combine per-case results into the candidate's speedup and score.

    `prior_findings` are the hacks earlier stages found (they zero the score too); the returned findings are
    only the ones this function adds. `hardware` is recorded by the caller; here it only tells whether the
    backend could time at all (an empty backend name is treated like a timing one). `single_case_check`
    off: class 14 is not looked for. It guards the search's score against the task's reference; timed
    against another baseline (torch.compile, the engine's own kernel: a confirmation's columns), parity on
    most cases and one clear win is an ordinary honest outcome, and nothing ranks by that aggregate.
    """
    notes: list[str] = []
    names: list[str] = []
    estimates: list[tuple[float, float, float]] = []
    for case in cases:
        if not case.passed:
            continue
        timing = _case_timing(case, task.regime, notes)
        if timing is None:
            continue
        estimate = _estimate(timing)
        if estimate is None:
            notes.append(f"case {case.name!r} has no finite speedup; left out of the aggregate")
            continue
        names.append(case.name)
        estimates.append(estimate)

    correct = bool(cases) and all(c.passed for c in cases)
    findings: list[HackFinding] = []
    if not estimates:
        if hardware.backend and correct:
            notes.append(f"nothing was timed on backend {hardware.backend!r}")
        score = UNTIMED_SCORE if correct and not prior_findings else 0.0
        return Aggregate(speedup=None, ci=None, score=score, findings=findings, notes=notes)

    speedup, lo, hi = stats.geometric_mean_ci(estimates)
    finding = single_case_finding(names, estimates) if single_case_check else None
    if finding is not None:
        findings.append(finding)
    flagged = bool(prior_findings) or bool(findings)
    score = speedup if correct and not flagged else 0.0
    return Aggregate(speedup=speedup, ci=(lo, hi), score=score, findings=findings, notes=notes)
