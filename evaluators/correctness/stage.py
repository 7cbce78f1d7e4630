"""The correctness stage: is the candidate's every output, and every argument it writes, what the reference
produces — on every case, for hidden seeds, on shapes it has never seen, and on the Nth call as on the first?

Per call the candidate runs FIRST on its own clone of fresh inputs (so no reference result exists in the
allocator yet), right after the allocator was poisoned; the reference then runs on clones of the same inputs,
in float64 where it can (native precision otherwise). compare.compare_call judges outputs, mutated and
untouched arguments. One call per case is watched by the runtime monitors (ATen ops, executed code, device
kernels). Hidden cases perturb the task's `dynamic` sizes (class 13); repeated calls with fresh values in the
same buffers expose caching (class 7) and drift (class 8). A task whose outputs barely depend on its inputs
is refused (class 12).
"""

from __future__ import annotations

import time
import traceback
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch

from evaluators.case_plan import plan_cases
from evaluators.context import JudgeContext
from evaluators.correctness.compare import CallComparison, Comparison, compare_call
from evaluators.correctness.reference import (
    Inputs,
    clone_inputs,
    named_tensors,
    output_nbytes,
    output_nbytes_guess,
    refill,
    run_reference,
)
from evaluators.correctness.tolerances import tolerance_for
from evaluators.degenerate import check_degenerate, degenerate_reason
from evaluators.errors import TaskError
from evaluators.guards.monitor import CallMonitor
from evaluators.guards.snapshots import ModuleFingerprint
from evaluators.hidden_cases import dynamic_keys, hardcoded_shapes_evidence, hidden_cases
from evaluators.result import CaseResult, HackFinding, KernelTime
from evaluators.task import Case

_REASON_LIMIT = 3000
_HISTORY = 8  # earlier expected answers per case kept to recognise a cached result


@dataclass
class CorrectnessReport:
    cases: list[CaseResult]
    findings: list[HackFinding]
    passed: bool  # every case matched the reference (hack findings are reported apart)
    reason: str
    reference_precision: str
    timeable: list[Case] = field(default_factory=list)


@dataclass
class _Call:
    """The verdict on one candidate call."""

    comparison: Comparison
    stale: bool = False  # it returned the answer to an earlier call's inputs


def check_correctness(ctx: JudgeContext) -> CorrectnessReport:
    return _Stage(ctx).run()


def check_call(
    ctx: JudgeContext,
    case: Case,
    inputs_before: Inputs,
    candidate_return: Any,
    inputs_after: Inputs,
) -> CallComparison:
    """Re-check one call made elsewhere (the timing stage's last timed call): run the reference on clones of
    `inputs_before` and compare the return value, mutated arguments and untouched arguments.
    `.comparison.ok` says whether it passed; `.findings` holds (class, evidence) pairs."""
    ref = run_reference(ctx, inputs_before)
    before = named_tensors(ctx.reference, inputs_before)
    after = named_tensors(ctx.reference, inputs_after)
    return compare_call(ref, candidate_return, before, after, ctx.task, lambda d: tolerance_for(d, ctx.task))


class _Stage:
    def __init__(self, ctx: JudgeContext) -> None:
        self.ctx = ctx
        self.task = ctx.task
        self.config = ctx.config
        self.device = ctx.backend.device
        self.findings: list[HackFinding] = []
        self.results: list[CaseResult] = []
        self.failures: list[str] = []
        self.monitor = CallMonitor(ctx) if ctx.config.runtime_checks else None
        self.poison_bytes: dict[str, int] = {}
        self.calls = 0
        self.history: dict[str, list[tuple[int, Any]]] = {}  # case -> [(call number, ReferenceRun)]
        # The first passing call (case, seed, seed index, call number): replayed when anything failed.
        self.golden: tuple[Case, int, int, int] | None = None

    # --- the phases ---------------------------------------------------------------------------------

    def run(self) -> CorrectnessReport:
        plan = plan_cases(self.task, self.ctx.backend, self.config, self.ctx.seeds[0])
        self.results.extend(plan.skipped)
        runnable = plan.runnable
        if not runnable:
            return self._report(
                f"no case can run on this backend: all {len(self.task.cases)} exceed interpret_max_numel"
            )
        started = time.monotonic()
        phases = {"degenerate": 0.0}
        passed: list[Case] = []
        for position, case in enumerate(runnable):
            if plan.should_skip(case, any_passed=bool(passed)):
                self.results.extend(plan.skip_rest(runnable[position:]))
                runnable = runnable[:position]
                break
            case_started = time.monotonic()
            ok = self._run_case(case)
            plan.record(case, time.monotonic() - case_started)
            mark = time.monotonic()
            degenerate = self._degenerate(case) if ok and self.config.degenerate_check else None
            phases["degenerate"] += time.monotonic() - mark
            if degenerate:
                self._flag("degenerate_task", degenerate)
                self.failures.append(f"degenerate task: {degenerate}")
                return self._report(self.failures[-1])
            if ok:
                passed.append(case)
            if position:
                # Only the first case is called again; kept to the end, the others' expected answers (float64
                # copies too: GBs for 4096-token cases) would crowd a worker's memory share.
                self.history.pop(case.name, None)
        phases["cases"] = time.monotonic() - started - phases["degenerate"]
        mark = time.monotonic()
        if len(passed) == len(runnable):
            self._hidden_cases(runnable)
        phases["hidden"] = time.monotonic() - mark
        mark = time.monotonic()
        self._repeated_calls(runnable[0])
        if self.failures and self.golden is not None:
            self._replay_golden(*self.golden)
        phases["repeated"] = time.monotonic() - mark
        self.ctx.log("correctness seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()))
        return self._report(self.failures[0] if self.failures else "", timeable=passed)

    def _run_case(self, case: Case) -> bool:
        worst = Comparison(ok=True)
        for index, seed in enumerate(self.ctx.seeds):
            inputs = self._make(case, seed)
            call = self._judge_call(
                case, inputs, watch=index == 0, label=f"case {case.name}, seed #{index + 1}"
            )
            worst = worst.merged(call.comparison)
            if call.comparison.ok and self.golden is None:
                self.golden = (case, seed, index, self.calls)
            if not call.comparison.ok:
                break
        kernels = self.monitor.last_kernels if self.monitor is not None else ()  # its first (watched) call's
        self.results.append(_case_result(case, worst, kernels=kernels))
        if not worst.ok:
            self.failures.append(f"case {case.name}: {worst.reason}")
        return worst.ok

    def _degenerate(self, case: Case) -> str | None:
        """Class 12 on the reference answers this case's seeds just produced (the task's fault, not the
        candidate's: a constant would pass). With a single seed configured, two more are run for it."""
        if case.is_captured:
            return None  # recorded values: every seed gets the same inputs
        runs = [{**ref.native_outputs, **ref.native_mutated} for _, ref in self.history.get(case.name, [])]
        if len(runs) >= 2:
            return degenerate_reason(self.task, case, runs)
        return check_degenerate(self.task, self.device, seeds=self._seeds(3), cases=[case])

    def _hidden_cases(self, runnable: list[Case]) -> None:
        """Perturb the `dynamic` sizes: a kernel built for the listed shapes only fails here (class 13)."""
        dynamic = dynamic_keys(self.task, runnable)
        if not dynamic or self.config.hidden_cases <= 0:
            return
        cases = hidden_cases(
            self.task, runnable, dynamic, self.ctx.seeds, self.device, self.config.hidden_cases
        )
        for number, case in enumerate(cases):
            params = case.params
            try:
                inputs = self.task.make_inputs(case, self.ctx.seeds[0], self.device)
                run_reference(self.ctx, inputs)
            except Exception as exc:  # the task cannot express this shape: not the candidate's fault
                self.ctx.log(
                    f"hidden case {params} skipped: the task rejects it ({type(exc).__name__}: {exc})"
                )
                continue
            call = self._judge_call(case, inputs, watch=False, label=f"hidden case {number + 1}")
            self.history.pop(case.name, None)  # called once: nothing to recognise a cached answer against
            self.results.append(_case_result(case, call.comparison, hidden=True))
            if not call.comparison.ok:
                shown, evidence = hardcoded_shapes_evidence(self.task, dynamic, case, call.comparison.reason)
                self._flag("hardcoded_shapes", evidence[:_REASON_LIMIT])
                self.failures.append(f"hidden case ({shown}): {call.comparison.reason}")

    def _repeated_calls(self, case: Case) -> None:
        """Call the candidate again and again on the SAME buffers refilled with fresh values, and last with
        the first call's values again: a cached answer or a call-count trigger shows up here."""
        count = self.config.drift_calls
        if count < 2 or case.is_captured:
            return
        seeds = self._seeds(count - 1, offset=101)
        fresh = [self._make(case, s) for s in seeds]
        sequence = [*fresh, fresh[0]]  # the last call repeats the first call's values
        buffers = clone_inputs(fresh[0])
        fingerprint = ModuleFingerprint(self.ctx.candidate_module)
        first_ok = False
        for k, values in enumerate(sequence):
            refilled = refill(buffers, values) if k else buffers
            if refilled is None:
                self.ctx.log(f"repeated calls skipped: case {case.name} changes shape with the seed")
                return
            buffers = refilled
            call = self._judge_call(case, buffers, watch=False, label=f"repeated call {k + 1}", in_place=True)
            changed = fingerprint.changes()
            if k >= 2 and changed:
                names = ", ".join(changed[:6])
                self._flag(
                    "output_caching", f"module state changed between repeated calls {k} and {k + 1}: {names}"
                )
            if call.comparison.ok:
                first_ok = first_ok or k == 0
                continue
            where = f"repeated call {k + 1} of {len(sequence)} (same buffers, fresh values)"
            if k == len(sequence) - 1 and first_ok and not call.stale:
                self._flag(
                    "drift",
                    f"{where}: the first call's values passed on call 1 and fail now: "
                    f"{call.comparison.reason}",
                )
            self.failures.append(f"{where}: {call.comparison.reason}")
            if k < len(sequence) - 1:
                continue  # still run the replay of call 1: it tells drift from a value-dependent bug
            return

    def _replay_golden(self, case: Case, seed: int, index: int, call_number: int) -> None:
        """Something failed: replay the very first call that passed, with the very same values. Failing now
        can only mean the candidate's behaviour depends on how often it was called (class 8)."""
        inputs = self._make(case, seed)
        call = self._judge_call(
            case, inputs, watch=False, label=f"replay of case {case.name}, seed #{index + 1}"
        )
        if not call.comparison.ok and not call.stale:
            self._flag(
                "drift",
                f"case {case.name}, seed #{index + 1} passed on candidate call {call_number} and fails with "
                f"the same input values on call {self.calls}: {call.comparison.reason}"[:_REASON_LIMIT],
            )

    # --- one call -----------------------------------------------------------------------------------

    def _judge_call(
        self, case: Case, inputs: Inputs, *, watch: bool, label: str, in_place: bool = False
    ) -> _Call:
        before = clone_inputs(inputs)
        given = inputs if in_place else clone_inputs(inputs)
        self._poison(case, inputs)
        value, error = self._call_candidate(given, watch, label)
        if error is not None:
            return _Call(Comparison(ok=False, reason=f"the candidate raised {error}"))
        try:
            ref = run_reference(self.ctx, before)
        except Exception as exc:
            raise TaskError(f"the reference of task {self.task.name!r} fails on {label}: {exc}") from exc
        self.poison_bytes[case.name] = output_nbytes(ref)
        after = named_tensors(self.ctx.reference, given)
        tolerances = lambda d: tolerance_for(d, self.task)
        before_named = named_tensors(self.ctx.reference, before)
        try:
            verdict = compare_call(ref, value, before_named, after, self.task, tolerances)
        except Exception as exc:  # a strange object returned by the candidate: its failure, not ours
            reason = f"{label}: comparing the candidate's output raised {type(exc).__name__}: {exc}"
            return _Call(Comparison(ok=False, reason=reason[:_REASON_LIMIT]))
        for kind, evidence in verdict.findings:
            self._flag(kind, f"{label}: {evidence}")
        comparison = verdict.comparison
        stale = None
        if not comparison.ok:
            comparison = Comparison(
                ok=False,
                max_abs_error=comparison.max_abs_error,
                max_rel_error=comparison.max_rel_error,
                mismatch=comparison.mismatch,
                reason=f"{label}: {comparison.reason}"[:_REASON_LIMIT],
            )
            stale = self._stale_answer(case, value, after)
            if stale is not None:
                self._flag(
                    "output_caching",
                    f"{label} (candidate call {self.calls}) returned the answer to the inputs of call "
                    f"{stale}: a result kept across calls ({comparison.reason})"[:_REASON_LIMIT],
                )
        history = self.history.setdefault(case.name, [])
        history.append((self.calls, ref))
        del history[:-_HISTORY]
        return _Call(comparison, stale=stale is not None)

    def _stale_answer(self, case: Case, value: Any, after: dict[str, torch.Tensor]) -> int | None:
        """The number of an earlier call of this case whose expected answer this output matches, if any."""
        tolerances = lambda d: tolerance_for(d, self.task)
        for number, earlier in reversed(self.history.get(case.name, [])):
            try:
                if compare_call(earlier, value, {}, after, self.task, tolerances).comparison.ok:
                    return number
            except Exception:  # an output the comparison cannot even read: not a stale answer
                return None
        return None

    def _call_candidate(self, inputs: Inputs, watch: bool, label: str) -> tuple[Any, str | None]:
        args, kwargs = inputs
        sandbox = self.ctx.sandbox
        armed = sandbox.armed() if sandbox is not None else nullcontext()
        watching = (
            self.monitor.watch(label, args, kwargs) if (watch and self.monitor is not None) else nullcontext()
        )
        self.calls += 1
        try:
            with armed, torch.no_grad():
                with watching:
                    value = self.ctx.candidate(*args, **kwargs)
                self.ctx.backend.synchronize()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit from a candidate is its failure, not the worker's
            return None, _brief(exc, self.ctx.candidate_path)
        finally:
            if self.monitor is not None:
                for finding in self.monitor.drain():
                    self._flag(finding.kind, finding.evidence)
        return value, None

    def _poison(self, case: Case, inputs: Inputs) -> None:
        if not self.config.poison_allocator:
            return
        nbytes = self.poison_bytes.get(case.name) or output_nbytes_guess(inputs)
        self.ctx.backend.poison_allocator(nbytes)

    def _make(self, case: Case, seed: int) -> Inputs:
        try:
            return self.task.make_inputs(case, seed, self.device)
        except TaskError:
            raise
        except Exception as exc:  # the task's inputs.py is broken for this case: not the candidate's fault
            raise TaskError(
                f"{self.task.inputs_path}: make_inputs fails on case {case.name!r}: {exc}"
            ) from exc

    # --- bookkeeping --------------------------------------------------------------------------------

    def _seeds(self, count: int, offset: int = 0) -> tuple[int, ...]:
        base = list(self.ctx.seeds) or [0]
        return tuple((base[i % len(base)] + offset + 7919 * (i // len(base))) % (2**31) for i in range(count))

    def _flag(self, kind: str, evidence: str) -> None:
        """Keep the first two pieces of evidence per class: enough to act on, short enough to read."""
        if sum(f.kind == kind for f in self.findings) < 2:
            self.findings.append(HackFinding(kind, evidence, detector="runtime"))

    def _report(self, reason: str, timeable: list[Case] | None = None) -> CorrectnessReport:
        listed_ok = all(r.passed or r.skipped for r in self.results) and any(r.passed for r in self.results)
        passed = listed_ok and not self.failures
        order = {case.name: i for i, case in enumerate(self.task.cases)}
        results = sorted(self.results, key=lambda r: (r.hidden, order.get(r.name, len(order))))
        return CorrectnessReport(
            cases=results,
            findings=list(self.findings),
            passed=passed,
            reason="" if passed else (reason or "no case passed"),
            reference_precision=str(self.ctx.notes.get("reference_precision", "native")),
            timeable=list(timeable or []) if passed else [],
        )


def _case_result(
    case: Case, comparison: Comparison, hidden: bool = False, kernels: tuple[KernelTime, ...] = ()
) -> CaseResult:
    return CaseResult(
        name=case.name,
        params=dict(case.params),
        passed=comparison.ok,
        max_abs_error=comparison.max_abs_error,
        max_rel_error=comparison.max_rel_error,
        mismatch=comparison.mismatch,
        hidden=hidden,
        kernels=kernels,
    )


def _brief(exc: BaseException, path: Any) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
    where = f" at line {frames[-1].lineno}" if frames else ""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return f"{text[:_REASON_LIMIT]}{where}"
