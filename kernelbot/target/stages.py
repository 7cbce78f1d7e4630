"""The six stages of a target run. Each takes the run's context and returns its typed record
(kernelbot.target.records), which target.toml keeps; where each writes is kernelbot.target.run_dir's layout.

extract    RUN/task/        the function as a Task (the user's --spec, or the one shipped for it)
evolve     RUN/search/      the search (kernelbot.target.search)
confirm    RUN/confirm.json the winner re-timed against every baseline column in fresh processes
           (kernelbot.confirm): the only figures a proposal prints
integrate  RUN/worktree/    a work tree of the base commit with the winning kernel put in
verify     RUN/verify.json  tests and benchmark on clean trees of the base and of the change
propose    RUN/pr/          the bundle; with --open-pr the branch pushed and the PR opened or updated
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelbot import git
from kernelbot.console import warn
from kernelbot.engines.convention import SlotEvidence
from kernelbot.engines.specs import shipped_spec
from kernelbot.errors import GitError
from kernelbot.target import run_dir as layout
from kernelbot.target.records import (
    ConfirmRecord,
    EvolveRecord,
    ExtractRecord,
    IntegrateRecord,
    ProposeRecord,
    VerifyRecord,
)
from kernelbot.target.runner import RunContext, Stage
from kernelbot.target.search import run_search, search_outcome

if TYPE_CHECKING:
    from evaluators.config import EvalConfig
    from kernelbot.engines.current_path import CurrentPath
    from kernelbot.integrate.integrate import Integration

_SHOWN = 5


def repo_path(ctx: RunContext) -> Path:
    return ctx.state.resolve(ctx.state.repo.path)


# --- extract ------------------------------------------------------------------------------------------------


def extract_stage(ctx: RunContext) -> ExtractRecord:
    from extractors.drafting.serving_shapes import profile_named
    from extractors.extract import ExtractOptions, extract

    options = ctx.options
    spec = options.spec or shipped_spec(ctx.state.profile, options.function)
    task = ctx.run_dir / layout.TASK_DIR
    ctx.view.step(f"extracting {options.function}" + (f" with inputs from {spec.name}" if spec else ""))
    # the run's checkout is named `upstream`, which says nothing of the engine: an engine's target profile
    # names its serving shapes
    extract_options = ExtractOptions(
        repo=repo_path(ctx),
        function=options.function,
        out=task,
        spec=spec,
        force=True,
        profile=profile_named(ctx.state.profile),
    )
    if options.regime:  # else the extractor's default regime
        extract_options = replace(extract_options, regime=options.regime, regime_from=options.regime_from)
    summary = extract(extract_options)
    if summary.inputs_source == "draft":
        warn(
            f"{task}/inputs.py is a draft guessed from names and hints; pass --spec to describe the "
            "inputs (a kernel is only as good as the cases it is judged on)"
        )
    probe = summary.probe
    return ExtractRecord(
        task_dir=ctx.state.relative(task),
        name=summary.name,
        entry=summary.entry,
        target=summary.target,
        inputs=summary.inputs_source,
        spec=str(spec) if spec else None,
        probe="ok" if probe is not None and probe.ran else (probe.error if probe is not None else "skipped"),
    )


def _extract_summary(outcome: ExtractRecord) -> str:
    return f"{outcome.task_dir}/ (entry {outcome.entry}, {outcome.inputs} inputs)"


# --- evolve -------------------------------------------------------------------------------------------------


def evolve_stage(ctx: RunContext) -> EvolveRecord:
    summary = run_search(
        ctx.task_dir(), ctx.run_dir, ctx.options.search, line_length=ctx.profile.formatter.line_length
    )
    return EvolveRecord.from_table(search_outcome(summary, ctx.run_dir))


def _evolve_summary(outcome: EvolveRecord) -> str:
    speed = f", speedup {outcome.speedup:.3f}x" if outcome.speedup else " (correct; speed not measured)"
    return (
        f"kernel {outcome.program_id} ({outcome.operator}){speed}; "
        f"{outcome.evaluations} evaluation(s); stopped: {outcome.stop_reason}"
    )


# --- confirm ------------------------------------------------------------------------------------------------


def confirm_stage(ctx: RunContext) -> ConfirmRecord:
    from kernelbot.confirm import ConfirmOptions, confirm

    evolve = ctx.state.record(EvolveRecord)
    source = ctx.state.resolve(evolve.kernel_file).read_text()
    today = _current_path(ctx)
    options = ConfirmOptions(
        rule=ctx.options.confirm,
        backend=evolve.backend or "auto",
        config=_search_eval_config(ctx.state.resolve(evolve.search_dir)),
        current_path_label=today.label() if today else "",
        current_path_reason=today.reason if today else "",
        kernel_compiled=_runs_compiled(ctx),
    )
    ctx.view.step("timing the winner again in fresh processes (eager, torch.compile, current path)")
    report = confirm(ctx.task_dir(), source, options, kernel_sha=evolve.kernel_sha, progress=ctx.view.step)
    return ConfirmRecord(
        report=layout.write_confirm(ctx.run_dir, report),
        measured=report.measured,
        reason=report.reason,
        beats_current_path=report.beats_current_path,
        processes={c.name: c.processes for c in report.columns},
        wall_s=report.wall_s,
    )


def _current_path(ctx: RunContext) -> CurrentPath | None:
    """What the engine runs today for the function (kernelbot.engines.current_path), or None."""
    from kernelbot.engines.current_path import current_path

    if ctx.profile is None:
        return None
    repo = repo_path(ctx)
    return current_path(repo, ctx.profile.for_tree(repo), ctx.options.function)


def _runs_compiled(ctx: RunContext) -> bool:
    """Whether the engine runs the function under torch.compile (then the kernel is timed compiled too)."""
    from kernelbot.engines.current_path import source_of
    from kernelbot.integrate.gather_target import runs_compiled

    if ctx.profile is None:
        return False
    repo = repo_path(ctx)
    profile = ctx.profile.for_tree(repo)
    path, _, qualname = source_of(repo, repo / profile.source_root, ctx.options.function)
    try:
        return runs_compiled(path.read_text(), qualname)
    except OSError:
        return False


def _search_eval_config(search_dir: Path) -> EvalConfig | None:
    """The evaluator settings the search ran with (the confirmation starts from them), or None."""
    from evolution.store import RunStore

    try:
        with RunStore.open(search_dir, readonly=True) as store:
            return store.config().eval
    except Exception:  # a store without a readable config: the evaluator's defaults
        return None


def _confirm_summary(outcome: ConfirmRecord) -> str:
    counts = ", ".join(f"{name} {n}" for name, n in outcome.processes.items())
    if not outcome.measured:
        return f"{outcome.reason or 'not measured'}; processes: {counts}"
    beats = outcome.beats_current_path
    current = (
        "" if beats is None else ("; beats the current path" if beats else "; does not beat the current path")
    )
    return f"processes: {counts} in {outcome.wall_s:.0f}s{current}"


# --- integrate ----------------------------------------------------------------------------------------------


def slot_evidence(ctx: RunContext) -> SlotEvidence:
    """What the confirmation measured that decides the engine's slot: whether the kernel beat the path the
    engine dispatches the op to today (SGLang `capabilities`, LMDeploy's build-spec mapping). A run whose
    confirmation is not recorded declares nothing (opt-in)."""
    report = ctx.confirmation()
    if report is None:
        return SlotEvidence()
    return SlotEvidence(
        beats_current_path=report.beats_current_path, measured_compiled=report.measured_compiled
    )


def fresh_worktree(repo: Path, path: Path, commit: str) -> Path:
    """A clean work tree of `repo` at `commit` at `path`; one left there by an interrupted run is replaced."""
    if path.exists():
        try:
            git.remove_worktree(repo, path)
        except GitError:  # not (or no longer) a registered work tree: it is our own leftover under RUN
            shutil.rmtree(path)
            git.remove_worktree(repo, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return git.add_worktree(repo, path, commit)


def integrate_stage(ctx: RunContext) -> IntegrateRecord:
    from kernelbot.integrate import integrate, op_slug

    task = ctx.task_dir()
    kernel = ctx.state.resolve(ctx.state.record(EvolveRecord).kernel_file).read_text()
    worktree = ctx.run_dir / layout.WORKTREE_DIR
    ctx.view.step(f"work tree of {ctx.state.repo.base_commit[:12]} at {worktree}")
    fresh_worktree(repo_path(ctx), worktree, ctx.state.repo.base_commit)
    slug = op_slug(task)
    integration = integrate(worktree, ctx.profile, task, kernel, op_slug=slug, evidence=slot_evidence(ctx))
    return integration_record(integration, ctx.state.relative(worktree))


def integration_record(integration: Integration, worktree: str) -> IntegrateRecord:
    """What target.toml keeps of a kernelbot.integrate.Integration: what the later stages read of it."""
    return IntegrateRecord(
        worktree=worktree,
        op_slug=integration.op_slug,
        kernel_module=Path(integration.kernel_module),
        test_file=Path(integration.test_file),
        touched=tuple(Path(p) for p in integration.touched),
        test_command=tuple(str(a) for a in integration.test_command),
        envelope=tuple(integration.envelope.describe()),
        cpu_test_env=dict(integration.cpu_test_env),
        notes=tuple(integration.notes),
        formatter=integration.formatter,
        slot=integration.slot,
        auto_selected=integration.auto_selected,
        selection=integration.selection,
        in_compile_region=integration.in_compile_region,
        bench_file=integration.bench_file.as_posix() if integration.bench_file else "",
    )


def _integrate_summary(outcome: IntegrateRecord) -> str:
    return (
        f"{outcome.worktree}/: kernel {outcome.kernel_module.as_posix()}, test {outcome.test_file.as_posix()}"
    )


# --- verify -------------------------------------------------------------------------------------------------


def verify_stage(ctx: RunContext) -> VerifyRecord:
    from kernelbot.verify import verify

    integration = ctx.state.record(IntegrateRecord)
    repo, base = repo_path(ctx), ctx.state.repo.base_commit
    scratch = layout.verify_scratch(ctx.run_dir)
    base_tree = fresh_worktree(repo, scratch / "base", base)
    change_tree = fresh_worktree(repo, scratch / "change", base)
    # The change tree is the base commit plus exactly the patch the bundle will carry.
    worktree = ctx.state.resolve(integration.worktree)
    git.apply_patch(change_tree, git.diff_against(worktree, base))
    try:
        report = verify(
            base_tree,
            change_tree,
            ctx.profile,
            integration,
            benchmark_runs=ctx.options.benchmark_runs,
            run_dir=ctx.run_dir,
            progress=ctx.view.step,
        )
    finally:
        for tree in (base_tree, change_tree):
            git.remove_worktree(repo, tree)
        shutil.rmtree(scratch, ignore_errors=True)
    tests, e2e = report.tests, report.e2e
    if not report.tests_ran:
        warn(
            f"the {ctx.profile.name} tests cannot run here: {tests.cannot_run}; {tests.advice}. "
            "The bundle says its tests were not run; --open-pr opens no pull request from it"
        )
    if tests.preexisting_failures:
        warn(
            f"{len(tests.preexisting_failures)} related test(s) already fail before the change (reported as "
            f"pre-existing, not blocking): {_named(tests.preexisting_failures)}"
        )
    delta = e2e.delta()
    return VerifyRecord(
        report=layout.write_verify(ctx.run_dir, report),
        ok=report.ok,
        tests_ran=report.tests_ran,
        tests_reason=tests.cannot_run,
        refusal=f"{report.refusal} (their output: {ctx.run_dir / tests.after.log})"
        if report.refusal
        else None,
        tests_run=tuple(tests.files),
        passed_before=tests.before.passed,
        passed_after=tests.after.passed,
        new_failures=tuple(tests.new_failures),
        preexisting_failures=tuple(tests.preexisting_failures),
        e2e_measured=e2e.measured,
        e2e_reason=e2e.reason,
        e2e_delta_pct=None if delta is None else delta.pct,
        e2e_ci_pct=None if delta is None or not delta.ci_pct else tuple(delta.ci_pct),
        e2e_runs=e2e.runs,
        e2e_conclusive=e2e.conclusive,
    )


def _named(ids: list[str] | tuple[str, ...]) -> str:
    return ", ".join(ids[:_SHOWN]) + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def _verify_summary(outcome: VerifyRecord) -> str:
    if not outcome.tests_ran:
        return f"tests not run: {outcome.tests_reason}; e2e not measured: {outcome.e2e_reason}"
    tests = (
        f"tests {outcome.passed_before} passed before, {outcome.passed_after} after, "
        f"{len(outcome.new_failures)} new failure(s), {len(outcome.preexisting_failures)} pre-existing"
    )
    if outcome.e2e_measured:
        ci = outcome.e2e_ci_pct
        ci_text = f" (95% CI {ci[0]:+.2f}% .. {ci[1]:+.2f}%)" if ci else ""
        runs = f", {outcome.e2e_runs} runs per side" if outcome.e2e_runs else ""
        verdict = "; inconclusive" if outcome.e2e_conclusive is False else ""
        return f"{tests}; e2e {outcome.e2e_delta_pct:+.2f}%{ci_text}{runs}{verdict}"
    return f"{tests}; e2e not measured: {outcome.e2e_reason}"


# --- propose ------------------------------------------------------------------------------------------------


def propose_stage(ctx: RunContext) -> ProposeRecord:
    from kernelbot.target.proposal import propose

    return propose(ctx, ctx.state.record(IntegrateRecord))


def _propose_summary(outcome: ProposeRecord) -> str:
    pr = outcome.pr
    bundle = f"bundle in {outcome.bundle}/"
    if pr is None:
        return bundle
    return f"{bundle}; PR {pr.action}: {pr.url or pr.reason}"


def _propose_again(ctx: RunContext, outcome: ProposeRecord) -> bool:
    # With --open-pr the forge is asked every time: it, not the last run's record, knows the PR's state.
    return ctx.options.open_pr


STAGE_LIST: list[Stage[Any]] = [
    Stage("extract", ExtractRecord, extract_stage, _extract_summary),
    Stage("evolve", EvolveRecord, evolve_stage, _evolve_summary),
    Stage("confirm", ConfirmRecord, confirm_stage, _confirm_summary),
    Stage("integrate", IntegrateRecord, integrate_stage, _integrate_summary),
    Stage("verify", VerifyRecord, verify_stage, _verify_summary),
    Stage("propose", ProposeRecord, propose_stage, _propose_summary, _propose_again),
]
