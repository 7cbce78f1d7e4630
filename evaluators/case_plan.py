"""Which cases the correctness stage runs on this backend, and in what order.

A GPU runs every case in task order. The interpreter (Triton kernels executed by numpy on the CPU) skips cases
with more input elements than `interpret_max_numel`, runs the rest smallest first, and stops starting new
ones once the next case, projected from the previous one's time per element, would overrun
`interpret_budget_s`: its cost grows with the number of kernel programs, so a 4096-token case can take minutes
where the 16-token case takes a second. At least one case always runs; skipped ones are reported with why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from evaluators.backends.base import Backend
from evaluators.config import EvalConfig
from evaluators.correctness.reference import estimate_numel
from evaluators.errors import TaskError
from evaluators.result import CaseResult
from evaluators.task import Case, Task


@dataclass
class CasePlan:
    runnable: list[Case]
    skipped: list[CaseResult] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)  # input elements per case (interpreter only)
    interpreted: bool = False
    budget_s: float = 0.0
    _started: float = field(default_factory=time.monotonic)
    _last: tuple[float, int] | None = None  # (seconds, elements) of the case run last

    def should_skip(self, case: Case, any_passed: bool) -> bool:
        """True when `case` would not finish inside the interpreter's budget (never on a GPU)."""
        if not self.interpreted or not any_passed or self._last is None:
            return False
        seconds, elements = self._last
        projected = seconds * self.sizes.get(case.name, elements) / max(elements, 1)
        return time.monotonic() - self._started + projected > self.budget_s

    def record(self, case: Case, seconds: float) -> None:
        self._last = (seconds, self.sizes.get(case.name, 1))

    def skip_rest(self, cases: list[Case]) -> list[CaseResult]:
        reason = f"the interpreter's {self.budget_s:g} s budget was spent on smaller cases"
        return [CaseResult(c.name, dict(c.params), passed=False, skipped=reason) for c in cases]


def plan_cases(task: Task, backend: Backend, config: EvalConfig, seed: int) -> CasePlan:
    if backend.can_time:
        return CasePlan(runnable=list(task.cases))
    limit = config.interpret_max_numel
    plan = CasePlan(runnable=[], interpreted=True, budget_s=config.interpret_budget_s)
    for case in task.cases:
        try:
            numel = estimate_numel(task, case, seed, backend.device)
        except Exception as exc:
            raise TaskError(f"{task.inputs_path}: make_inputs fails on case {case.name!r}: {exc}") from exc
        if numel > limit:
            reason = f"{numel} input elements > interpret_max_numel {limit}"
            plan.skipped.append(CaseResult(case.name, dict(case.params), passed=False, skipped=reason))
            continue
        plan.sizes[case.name] = numel
        plan.runnable.append(case)
    plan.runnable.sort(key=lambda c: plan.sizes[c.name])
    return plan
