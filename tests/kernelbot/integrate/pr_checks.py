"""Checks of an integration that a maintainer's review would make (kernelbot.integrate.review), shared by the
minirepo and real-release tests: the guard names no size the task's cases had, and the generated test runs
over at least two dtypes (each one the task's cases were built in, so the evaluator checked it) and four
shapes from at least two model families, each case saying where it comes from."""

from __future__ import annotations

from pathlib import Path

from evaluators.static.facts import task_float_dtypes
from evaluators.task import load_task
from kernelbot.integrate import Integration
from kernelbot.integrate.review import coverage_problems, guard_size_literals, long_lines


def assert_reviewable(repo: Path, integration: Integration, task_dir: Path, width: int) -> None:
    scripts = [repo / p for p in (integration.test_file, integration.bench_file) if p is not None]
    assert long_lines(scripts, width) == []
    assert guard_size_literals(repo / integration.kernel_module, integration.guard, task_dir) == []
    checked = task_float_dtypes(load_task(task_dir))
    assert coverage_problems(repo / integration.test_file, checked) == []
