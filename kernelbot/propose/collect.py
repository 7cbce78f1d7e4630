"""build_evidence: gather the numbers of a proposal from where they were measured, deciding nothing twice.

    build_evidence(search_dir=RUN/search, task_dir=RUN/task, profile=..., integration=..., verify=...,
                   repo_url=..., base_sha=..., base_branch=..., function=..., op_slug=...) -> Evidence

- the winning candidate and its verdict (errors, hardware, versions) from the search's store
  (evolution.summary.best_program), iterations / evaluations / tokens / cost from it too; never its
  timings: the speed figures come only from the confirmation (RUN/confirm.json, kernelbot.confirm), which
  re-timed the winner in fresh processes against eager, torch.compile and the engine's current path;
- the task (tolerances, dynamic sizes, regime) from task.toml;
- the related tests and the end-to-end benchmark from verify.json's content (or None when verify did not run:
  the evidence then says so instead of showing numbers);
- the files, kernel module, test and envelope from the Integration.

Nothing is invented: a number missing at its source stays None and the body says it was not measured.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shlex
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kernelbot
from evaluators.correctness.tolerances import tolerance_for
from evaluators.result import EvalResult
from evaluators.task import Task, load_task
from evolution.store import RunStore
from evolution.summary import best_program
from kernelbot.engines.model import Profile
from kernelbot.errors import RunStateError
from kernelbot.propose.evidence import (
    AccuracyCase,
    AccuracyEvidence,
    BaselineColumn,
    CaseBench,
    ColumnFigure,
    E2EEvidence,
    EnvironmentEvidence,
    Evidence,
    MicrobenchEvidence,
    ModificationsEvidence,
    MotivationEvidence,
    OpEvidence,
    ProvenanceEvidence,
    RepoEvidence,
    TestCounts,
    TestsEvidence,
)
from kernelbot.target.records import IntegrateRecord

if TYPE_CHECKING:
    from kernelbot.confirm.report import ConfirmReport

SUMMARY = "Fused Triton kernel for {qualname}"
NOT_PROFILED = "the region's share of the engine's time was not profiled for this proposal"


def build_evidence(
    *,
    search_dir: Path,
    task_dir: Path,
    profile: Profile,
    integration: IntegrateRecord,
    verify: Mapping[str, Any] | None,
    repo_url: str,
    base_sha: str,
    base_branch: str,
    function: str,
    op_slug: str,
    share_of_time_pct: float | None = None,
    share_source: str = NOT_PROFILED,
    reproduce: str | None = None,
    confirm: ConfirmReport | None = None,
    base_ref: str = "",
    search_s: float | None = None,
) -> Evidence:
    """The Evidence of one proposal (see the module docstring for where each part comes from). `confirm` is
    the confirm stage's report (None: no confirmation ran): the only source of speed figures."""
    task = load_task(task_dir)
    with RunStore.open(search_dir, readonly=True) as store:
        best = best_program(store)
        if best is None or best.result is None:
            raise RunStateError(
                f"{search_dir}: no candidate passed the evaluator, so there is nothing to propose"
            )
        config = store.config()
        operators = Counter(p.operator.split(":", 1)[0] for p in store.programs())
        usage = store.token_usage()
        iterations, evaluations = store.mutation_count("evolve"), store.evaluation_count()
    result = best.result
    qualname = function.split(":", 1)[-1]
    return Evidence(
        op=OpEvidence(
            slug=op_slug,
            function=function,
            profile=profile.name,
            kernel_hash=kernel_hash(best.source),
            title=profile.pr_title(SUMMARY.format(qualname=qualname)),
        ),
        repo=RepoEvidence(url=repo_url, base_sha=base_sha, branch=base_branch, base_ref=base_ref),
        environment=_environment(result),
        motivation=MotivationEvidence(share_of_time_pct=share_of_time_pct, source=share_source),
        modifications=_modifications(integration),
        accuracy=_accuracy(task, result, config.eval.seeds_per_case, config.eval.hidden_cases),
        microbenchmarks=microbenchmarks(confirm, task.regime),
        tests=tests_evidence((verify or {}).get("tests")),
        e2e=e2e_evidence((verify or {}).get("e2e")),
        provenance=ProvenanceEvidence(
            operators=dict(sorted(operators.items())),
            models=tuple(endpoint.model for endpoint in config.mutation.llm),
            best_operator=best.operator,
            iterations=iterations,
            evaluations=evaluations,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=float(usage.cost_usd),
            search_s=search_s,
        ),
        reproduce=reproduce or shlex.join(str(a) for a in integration.test_command),
        human_steps=tuple(str(s) for s in profile.human_steps),
    )


def kernel_hash(source: str) -> str:
    """The identity of a kernel across runs: its source with line endings and trailing blanks normalised."""
    text = "\n".join(line.rstrip() for line in source.replace("\r\n", "\n").strip().splitlines())
    return hashlib.sha256(text.encode()).hexdigest()


def _environment(result: EvalResult) -> EnvironmentEvidence:
    hw = result.hardware
    return EnvironmentEvidence(
        gpu=hw.device,
        driver=hw.driver,
        torch=hw.torch,
        triton=hw.triton,
        python=hw.python,
        runtime=hw.runtime,
        backend=result.backend or hw.backend,
        kernelbot=kernelbot.__version__,
    )


def _modifications(integration: IntegrateRecord) -> ModificationsEvidence:
    files = sorted({str(p) for p in (*integration.touched, integration.kernel_module, integration.test_file)})
    return ModificationsEvidence(
        files=tuple(files),
        kernel_module=str(integration.kernel_module),
        test_file=str(integration.test_file),
        envelope=integration.envelope,
        formatter=integration.formatter,
        slot=integration.slot,
        auto_selected=integration.auto_selected,
        selection=integration.selection,
        in_compile_region=integration.in_compile_region,
        bench_file=integration.bench_file,
    )


def _accuracy(task: Task, result: EvalResult, seeds: int, hidden: int) -> AccuracyEvidence:
    cases = []
    for case in result.cases:
        dtype = str(case.params.get("dtype", "") or "")
        tol = tolerance_for(dtype, task) if dtype else None
        cases.append(
            AccuracyCase(
                name=case.name,
                params=dict(case.params),
                dtype=dtype,
                passed=case.passed,
                max_abs_error=case.max_abs_error,
                max_rel_error=case.max_rel_error,
                atol=tol.atol if tol else None,
                rtol=tol.rtol if tol else None,
                hidden=case.hidden,
                skipped=case.skipped,
            )
        )
    return AccuracyEvidence(
        cases=tuple(cases),
        seeds_per_case=seeds,
        hidden_cases=sum(1 for c in result.cases if c.hidden) or hidden,
        dynamic_keys=tuple(task.dynamic),
        reference_precision=result.reference_precision,
    )


NOT_CONFIRMED = (
    "the kernel was not re-measured apart from the search (no confirmation run), and the search's own "
    "figures are never shown"
)


def microbenchmarks(confirm: ConfirmReport | None, regime: str) -> MicrobenchEvidence:
    """The figures of the confirmation (None: none ran), per case,
    regime and baseline column. The search's own timings never get here: its winner is the largest of many
    noisy estimates, measured beside its own workers."""
    if confirm is None:
        return MicrobenchEvidence(measured=False, reason=NOT_CONFIRMED, regime=regime)
    columns = tuple(
        BaselineColumn(c.name, c.label, c.available and bool(c.cells), c.reason, c.processes)
        for c in confirm.columns
    )
    unmeasured = MicrobenchEvidence(
        measured=False,
        reason=confirm.reason,
        regime=regime,
        columns=columns,
        confidence_pct=round(100.0 * confirm.rule_number("confidence", 0.975), 2),
        min_processes=int(confirm.rule_number("min_processes", 0)),
        max_processes=int(confirm.rule_number("max_processes", 0)),
        spread_floor_pct=tuple((r, round(100.0 * floor, 2)) for r, floor in confirm.spread_floors().items()),
        confirm_s=float(confirm.wall_s),
    )
    if not confirm.measured:
        return unmeasured
    keys: list[tuple[str, str]] = []
    params: dict[str, dict[str, object]] = {}
    for column in confirm.columns:
        for cell in column.cells:
            params.setdefault(cell.case, dict(cell.params))
            if (cell.case, cell.regime) not in keys:
                keys.append((cell.case, cell.regime))
    order = {r: i for i, r in enumerate(confirm.regimes)}
    keys.sort(key=lambda k: (order.get(k[1], len(order)),))  # task regime first, cases in measured order
    cases = []
    for case, case_regime in keys:
        figures = []
        for column in confirm.columns:
            found = column.cell(case, case_regime)
            if found is None:
                continue
            figures.append(
                ColumnFigure(
                    column=column.name,
                    pooled=found.pooled,
                    bound=found.lower,
                    upper=found.upper,
                    processes=found.processes,
                    cv_pct=None if found.cv is None else 100.0 * found.cv,
                    verdict=found.verdict,
                    baseline_us=found.baseline_us,
                    kernel_us=found.kernel_us,
                )
            )
        cases.append(CaseBench(case, params[case], case_regime, tuple(figures)))
    return dataclasses.replace(
        unmeasured,
        measured=True,
        reason="",
        cases=tuple(cases),
        beats_current_path=confirm.beats_current_path,
        not_faster_than_current=tuple(f"{c.case} ({c.regime})" for c in confirm.current_path_not_faster),
    )


def _counts(run: Mapping[str, Any] | None) -> TestCounts | None:
    if not run:
        return None
    return TestCounts(passed=int(run["passed"]), failed=int(run["failed"]), skipped=int(run["skipped"]))


def tests_evidence(tests: Mapping[str, Any] | None) -> TestsEvidence:
    """From verify.json's "tests" (None: verification did not run)."""
    if not tests:
        return TestsEvidence(ran=False, reason="the repository's tests were not run for this proposal")
    if tests.get("cannot_run"):
        return TestsEvidence(
            ran=False,
            reason=f"not run where this proposal was made: {tests['cannot_run']}",
            command=tuple(tests.get("command", ())),
            files=tuple(tests.get("files", ())),
        )
    return TestsEvidence(
        ran=True,
        reason="",
        command=tuple(tests.get("command", ())),
        files=tuple(tests.get("files", ())),
        before=_counts(tests.get("before")),
        after=_counts(tests.get("after")),
        new_failures=tuple(tests.get("new_failures", ())),
        preexisting_failures=tuple(tests.get("preexisting_failures", ())),
        fixed=tuple(tests.get("fixed", ())),
    )


def e2e_evidence(e2e: Mapping[str, Any] | None) -> E2EEvidence:
    """From verify.json's "e2e" (None: verification did not run). Claimed only when the delta's whole
    interval lies on the better side of zero; a regression when it lies wholly on the worse side."""
    if not e2e:
        return E2EEvidence(measured=False, reason="the end-to-end benchmark was not run for this proposal")
    if not e2e.get("measured"):
        return E2EEvidence(
            measured=False,
            reason=str(e2e.get("reason") or "not measured"),
            command=tuple(e2e.get("command", ())),
            cwd=str(e2e.get("cwd", "")),
        )
    means, cv, ci = e2e.get("means") or {}, e2e.get("cv") or {}, e2e.get("ci_pct")
    low, high = (float(ci[0]), float(ci[1])) if ci else (None, None)
    better = bool(e2e.get("higher_is_better", True))
    claimed = regressed = False
    if low is not None and high is not None:
        claimed = low > 0 if better else high < 0
        regressed = high < 0 if better else low > 0
    return E2EEvidence(
        measured=True,
        reason="",
        command=tuple(e2e.get("command", ())),
        cwd=str(e2e.get("cwd", "")),
        metric=str(e2e.get("metric", "")),
        unit=str(e2e.get("unit", "")),
        higher_is_better=better,
        before=tuple(float(v) for v in e2e.get("before", ())),
        after=tuple(float(v) for v in e2e.get("after", ())),
        before_mean=_float(means.get("before")),
        after_mean=_float(means.get("after")),
        before_cv_pct=_pct(cv.get("before")),
        after_cv_pct=_pct(cv.get("after")),
        delta_pct=_float(e2e.get("delta_pct")),
        ci_low_pct=low,
        ci_high_pct=high,
        claimed=claimed,
        regressed=regressed,
        confidence_pct=round(100 * float(e2e.get("confidence") or 0.95)),
        runs=int(e2e.get("runs") or len(e2e.get("before", ()))),
        target_half_width_pct=_float(e2e.get("target_half_width_pct")),
        inconclusive=e2e.get("conclusive") is False,
        stopped_by=_stopped_by(e2e),
    )


def _stopped_by(e2e: Mapping[str, Any]) -> str:
    """The time budget, in words, where it ended an inconclusive comparison (verify.json's `limit`); ""
    otherwise (the body says "the cap" for the cap on runs)."""
    budget = e2e.get("time_budget_s")
    return f"the time budget of {float(budget):g} s" if e2e.get("limit") == "time" and budget else ""


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _pct(fraction: Any) -> float | None:
    return None if fraction is None else 100.0 * float(fraction)
