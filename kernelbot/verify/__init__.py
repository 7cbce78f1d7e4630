"""Verification of a change in its repository: the related tests before and after, and the end-to-end
benchmark of both sides (see kernelbot.verify.report for what RUN/verify.json holds).

    report = verify(base_worktree, change_worktree, profile, integration, benchmark_runs=5)
    report.ok        # False when the change makes a test fail that passed (or did not exist) before
    report.refusal   # the one line naming those tests
    report.tests_ran # False when the code the tests import cannot be imported here even before the change

Both work trees must be clean checkouts: the base commit, and the base commit plus the change. The tests run
are the profile's test command restricted to the generated test and to the repository's test files that
import a touched module (kernelbot.verify.related); on a machine without a GPU they run with Triton's
interpreter switched on (TRITON_INTERPRET=1, on both sides alike), so the generated test compares the kernel
with the original for real. The benchmark runs only where it can mean something (kernelbot.verify.benchmark).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kernelbot.verify.benchmark import (
    DEFAULT_MAX_RUNS,
    BenchmarkCommand,
    E2EOutcome,
    not_measured,
    run_alternating,
)
from kernelbot.verify.importable import base_import_problem
from kernelbot.verify.related import related_test_files
from kernelbot.verify.repo_tests import TestRun, run_tests
from kernelbot.verify.report import TestComparison, VerifyReport

if TYPE_CHECKING:
    from kernelbot.engines.model import BenchmarkSpec, Profile
    from kernelbot.target.records import IntegrateRecord


def verify(
    base_worktree: Path,
    change_worktree: Path,
    profile: Profile,
    integration: IntegrateRecord,
    *,
    benchmark_runs: int | None = None,
    run_dir: Path | None = None,
    progress: Callable[[str], None] = lambda message: None,
) -> VerifyReport:
    """Run the related tests and the benchmark on both trees; write RUN/verify.json (RUN defaults to the
    change work tree's parent, as in the run directory's layout) and return the report.

    `benchmark_runs` per side (the least; pairs are added until the change's CI is within +-2 %, up to
    DEFAULT_MAX_RUNS a side, or `benchmark_runs` when larger) defaults to the profile benchmark's `runs`."""
    from kernelbot.target import run_dir as layout

    run_dir = run_dir or change_worktree.parent
    logs = layout.verify_logs(run_dir)
    gpu = gpu_available()
    # Without a GPU the kernels run on Triton's interpreter, on both sides alike (what the integration asks).
    env = {} if gpu else dict(integration.cpu_test_env or {"TRITON_INTERPRET": "1"})
    source_root = profile.source_root
    tests = _compare_tests(
        base_worktree, change_worktree, profile, integration, source_root, logs, env, progress
    )
    if tests.cannot_run and gpu:  # the benchmark would fail the same way on both sides
        e2e = not_measured(f"the engine cannot be imported here: {tests.cannot_run}")
    else:
        e2e = _benchmark(
            base_worktree, change_worktree, profile, benchmark_runs, source_root, logs, gpu, progress
        )
    report = VerifyReport(
        tests=_logs_relative(tests, run_dir), e2e=replace(e2e, logs=_relative(e2e.logs, run_dir))
    )
    layout.write_verify(run_dir, report)
    return report


def _relative(paths: tuple[str, ...], root: Path) -> tuple[str, ...]:
    """Log paths relative to RUN, so that verify.json stays true when the run directory moves."""
    out = []
    for path in paths:
        try:
            out.append(Path(path).resolve().relative_to(root.resolve()).as_posix())
        except ValueError:
            out.append(path)
    return tuple(out)


def _logs_relative(tests: TestComparison, root: Path) -> TestComparison:
    before, after = (
        replace(run, log=_relative((run.log,), root)[0]) if run.log else run
        for run in (tests.before, tests.after)
    )
    return replace(tests, before=before, after=after)


def gpu_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _compare_tests(
    base: Path,
    change: Path,
    profile: Profile,
    integration: IntegrateRecord,
    source_root: str,
    logs: Path,
    env: dict[str, str],
    progress: Callable[[str], None],
) -> TestComparison:
    command = tuple(profile.test_command)
    generated = Path(integration.test_file)
    related = related_test_files(change, integration.touched, source_root)
    files = [generated, *(f for f in related if f != generated)]
    progress("importing what the tests need on the base")
    kernel = _dotted(Path(integration.kernel_module), source_root)
    problem = base_import_problem(base, change / generated, kernel, source_root, env)
    if problem is not None:
        package = profile.package or "the repository"
        return TestComparison.not_run(
            command, tuple(str(f) for f in files), problem.reason(), problem.advice(package)
        )
    progress(f"tests on the base: {len(files) - 1} related file(s)")
    on_base = [f for f in files if (base / f).is_file()]  # the generated test is new with the change
    before = (
        run_tests(
            base, command, on_base, source_root=source_root, report_dir=logs, label="tests-base", env=env
        )
        if on_base
        else TestRun(command, 0, 0, 0, 0, (), 0.0, note="no related test file exists before the change")
    )
    progress(f"tests on the change: {len(files)} file(s) with the generated test")
    after = run_tests(
        change, command, files, source_root=source_root, report_dir=logs, label="tests-change", env=env
    )
    return TestComparison.of(command, tuple(str(f) for f in files), before, after)


def _dotted(path: Path, source_root: str) -> str:
    """The module name of a repo-root relative .py path under the source root."""
    relative = path.relative_to(source_root) if source_root else path
    return ".".join(relative.with_suffix("").parts)


def _benchmark(
    base: Path,
    change: Path,
    profile: Profile,
    runs: int | None,
    source_root: str,
    logs: Path,
    gpu: bool,
    progress: Callable[[str], None],
) -> E2EOutcome:
    spec = profile.benchmark
    if spec is None:
        return not_measured(f"the {profile.name} profile defines no end-to-end benchmark")
    runs = spec.runs if runs is None else runs
    argv = spec.resolved_argv(os.environ)
    if isinstance(argv, str):  # a placeholder's variable is not set
        return not_measured(argv + (f" ({spec.note})" if spec.note else ""), runs=runs)
    command = benchmark_command(spec, argv)
    if runs <= 0:
        return not_measured("--benchmark-runs 0 asked for none", command, runs)
    if not gpu:
        reason = (
            "no GPU on this machine; the kernel runs only on a GPU, so here both sides would "
            "run the same PyTorch code"
        )
        return not_measured(reason, command, runs)
    return run_alternating(
        command,
        base,
        change,
        runs,
        log_dir=logs,
        source_root=source_root,
        progress=progress,
        max_runs=max(runs, DEFAULT_MAX_RUNS),
        time_budget_s=spec.time_budget_s,
        hold=gpu_hold,
    )


@contextlib.contextmanager
def gpu_hold() -> Iterator[None]:
    """The GPU lock of device 0 (evaluators.gpu_lock) for the whole benchmark: no kernelbot timing runs on
    the GPU while the engine is measured."""
    from evaluators.gpu_lock import GpuLock, device_key

    with GpuLock(device_key(0)).hold():
        yield


def benchmark_command(spec: BenchmarkSpec, argv: tuple[str, ...]) -> BenchmarkCommand:
    """The profile's benchmark (kernelbot.engines.BenchmarkSpec) as the command verification runs."""
    metric = spec.metric
    return BenchmarkCommand(
        argv=tuple(argv),
        metric=metric.json_key or "metric",
        cwd="" if spec.cwd in ("", ".") else spec.cwd,
        env=dict(spec.env),
        json_key=metric.json_key or None,
        regex=metric.regex or None,
        unit=metric.unit,
        higher_is_better=metric.higher_is_better,
    )


__all__ = [
    "BenchmarkCommand",
    "E2EOutcome",
    "TestComparison",
    "VerifyReport",
    "verify",
]
