"""Structured feedback on a program: what the evaluator found, as plain values a prompt template renders.

From an EvalResult: how far the cascade got and why it stopped, the compile/runtime log tail, for each case
whether it matched (and where and by how much it did not), its speedups in both regimes with their
confidence intervals (marking the regime that is scored) and the fraction of the roofline reached, on a GPU
the kernels one call launched with their times, and every hack finding with its evidence. The
text itself comes from evolution/prompts/feedback.j2 (see evolution.mutators.prompts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluators.result import HACK_CLASSES, CaseResult, EvalResult, KernelTime, RegimeTiming, Stage

LOG_LIMIT = 2000
KERNELS_SHOWN = 8  # launches listed per case; the count and the total cover the rest


@dataclass(frozen=True)
class TimingView:
    regime: str
    scored: bool
    speedup: str
    ci: str
    reference_us: str
    candidate_us: str
    cv: str
    real: bool
    roofline: str = ""  # "reaches 42% of the roofline (floor 1.20 us)"; empty without a floor


@dataclass(frozen=True)
class CaseView:
    name: str
    status: str  # "ok" | "WRONG" | "skipped"
    params: str
    errors: str  # "max abs 1.2e-03, max rel 4.0e-04"
    mismatch: str  # where the first differing element was
    skipped: str
    hidden: bool
    timings: tuple[TimingView, ...] = ()
    kernels: str = ""  # "2 kernel launches, 4.12 us on the GPU: _a 3.10 us, _b 1.02 us" (GPU only)


@dataclass(frozen=True)
class HackView:
    kind: str
    number: int
    description: str
    evidence: str
    detector: str


@dataclass(frozen=True)
class Feedback:
    evaluated: bool
    stage: str = ""
    passed: bool = False
    verdict: str = (
        ""  # one line: "correct; 1.42x faster ... in the graph regime" / "failed at the compile stage"
    )
    reason: str = ""
    regime: str = ""
    backend: str = ""
    score: str = ""
    log: str = ""
    cases: tuple[CaseView, ...] = ()
    hacks: tuple[HackView, ...] = ()
    quarantined: bool = False
    failing: bool = False  # incorrect, stopped early, or flagged: the next step is a fix
    extra: dict[str, Any] = field(default_factory=dict)


def build_feedback(result: EvalResult | None, log_limit: int = LOG_LIMIT) -> Feedback:
    if result is None:
        return Feedback(evaluated=False, verdict="not evaluated yet")
    show_log = result.stage in (Stage.STATIC, Stage.COMPILE) or not result.correct
    return Feedback(
        evaluated=True,
        stage=result.stage.value,
        passed=result.passed,
        verdict=_verdict(result),
        reason=result.reason,
        regime=result.regime,
        backend=result.backend,
        score=_num(result.score),
        log=_tail(result.logs, log_limit) if show_log else "",
        cases=tuple(_case(c, result.regime) for c in result.cases),
        hacks=tuple(_hack(h.kind, h.evidence, h.detector) for h in result.hacks),
        quarantined=result.quarantined,
        failing=bool(result.hacks) or not result.correct or not result.passed,
    )


def _verdict(result: EvalResult) -> str:
    hacks = ""
    if result.hacks:
        hacks = f"rejected as a hack ({', '.join(sorted({h.kind for h in result.hacks}))}); score 0"
    if not result.correct:
        where = result.stage.value
        failure = f"failed at the {where} stage" + (f": {result.reason}" if result.reason else "")
        return f"{failure}; {hacks}" if hacks else failure
    if hacks:
        return hacks
    if result.speedup is None:
        return f"correct on every case; not timed on the {result.backend} backend"
    ci = f" (95% CI {_num(result.speedup_ci[0])}-{_num(result.speedup_ci[1])})" if result.speedup_ci else ""
    return f"correct; {_num(result.speedup)}x faster than the reference{ci} in the {result.regime} regime"


def _case(case: CaseResult, regime: str) -> CaseView:
    status = "skipped" if case.skipped else "ok" if case.passed else "WRONG"
    errors = ""
    if case.max_abs_error is not None or case.max_rel_error is not None:
        errors = f"max abs error {_sci(case.max_abs_error)}, max rel error {_sci(case.max_rel_error)}"
    mismatch = ""
    if case.mismatch is not None:
        m = case.mismatch
        mismatch = f"{m.output} differs at {list(m.index)}: expected {m.expected:.6g}, got {m.actual:.6g}"
        if m.detail:
            mismatch += f" ({m.detail})"
    params = ", ".join(f"{k}={v}" for k, v in case.params.items())
    timings = tuple(_timing(name, t, name == regime) for name, t in sorted(case.timings.items()))
    kernels = _kernels(case.kernels)
    return CaseView(case.name, status, params, errors, mismatch, case.skipped, case.hidden, timings, kernels)


def _kernels(kernels: tuple[KernelTime, ...]) -> str:
    """The launches of one watched call: how many, their GPU time in all, and each one's."""
    if not kernels:
        return ""
    total = sum(k.device_us for k in kernels)
    shown = ", ".join(f"{k.name} {k.device_us:.2f} us" for k in kernels[:KERNELS_SHOWN])
    more = f", and {len(kernels) - KERNELS_SHOWN} more" if len(kernels) > KERNELS_SHOWN else ""
    launches = "1 kernel launch" if len(kernels) == 1 else f"{len(kernels)} kernel launches"
    return f"{launches}, {total:.2f} us on the GPU: {shown}{more}"


def _roofline(timing: RegimeTiming) -> str:
    """How close the candidate's median comes to the least time any correct implementation can take."""
    floor, measured = timing.floor_us, timing.candidate.median_us
    if not floor or floor <= 0 or not measured or measured <= 0:
        return ""
    return f"reaches {100 * floor / measured:.0f}% of the roofline (floor {floor:.2f} us)"


def _timing(regime: str, timing: RegimeTiming, scored: bool) -> TimingView:
    return TimingView(
        regime=regime,
        scored=scored,
        speedup=_num(timing.speedup),
        ci=f"{_num(timing.ci_low)}-{_num(timing.ci_high)}",
        reference_us=f"{timing.reference.median_us:.2f}",
        candidate_us=f"{timing.candidate.median_us:.2f}",
        cv=f"{max(timing.reference.cv, timing.candidate.cv) * 100:.1f}%",
        real=timing.real,
        roofline=_roofline(timing),
    )


def _hack(kind: str, evidence: str, detector: str) -> HackView:
    number, description = HACK_CLASSES.get(kind, (0, kind))
    return HackView(kind, number, description, _tail(evidence, 600), detector)


def _tail(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else "[...]\n" + text[-limit:]


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _sci(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2e}"
