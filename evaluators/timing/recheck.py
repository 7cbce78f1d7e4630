"""The post-timing re-check's judge: evaluators.correctness.check_call, and how its answer is read.

Kept apart from the timing stage so that stage depends on the judge only through this small surface: any
callable with check_call's signature (a test's stand-in, a bench script's allclose) may take its place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evaluators.context import JudgeContext
from evaluators.result import HACK_CLASSES, HackFinding
from evaluators.task import Case
from evaluators.timing.inputs import Inputs

CheckCall = Callable[[JudgeContext, Case, Inputs, Any, Inputs], Any]


def default_check_call() -> CheckCall:
    """The judge's check_call, imported on first use: it pulls in the whole correctness stage (profiler
    guards, hidden cases), which bench scripts that pass their own check never need."""
    from evaluators.correctness.stage import check_call

    return check_call


def read_verdict(answer: Any) -> tuple[bool, str, list[HackFinding]]:
    """Read check_call's answer: a bool, or an object with .ok/.passed and .reason, possibly nested in
    .comparison (the judge's CallComparison), with .findings as HackFindings or (kind, evidence) pairs."""
    if isinstance(answer, bool):
        return answer, "", []
    inner = getattr(answer, "comparison", answer)
    ok = getattr(inner, "ok", getattr(inner, "passed", None))
    if ok is None:
        raise TypeError(f"check_call returned {type(answer).__name__}, which has no 'ok' or 'passed'")
    reason = str(getattr(inner, "reason", "") or "")
    findings: list[HackFinding] = []
    for item in getattr(answer, "findings", None) or []:
        if isinstance(item, HackFinding):
            findings.append(item)
        elif isinstance(item, tuple) and len(item) == 2 and item[0] in HACK_CLASSES:
            findings.append(HackFinding(kind=item[0], evidence=f"post-timing re-check: {item[1]}"))
    return bool(ok), reason, findings
