"""Checks of an integration that a maintainer's review would make, shared by the minirepo and real-release
tests: the guard names no size the task's cases had, and the generated test runs over at least two dtypes
(each one the task's cases were built in, so the evaluator checked it) and four shapes from at least two
model families, each case saying where it comes from."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from evaluators.static.facts import task_float_dtypes
from evaluators.task import load_task
from kernelbot.integrate import Integration

# Ranks and the like are small numbers; sizes a spec or draft gives (hidden, vocab, experts) are not.
_SMALLEST_SIZE = 16


def guard_size_literals(repo: Path, integration: Integration, task_dir: Path) -> list[int]:
    """Integer literals in the guard's body that equal a size of one of the task's cases."""
    sizes = {
        v
        for case in load_task(task_dir).cases
        for v in case.params.values()
        if type(v) is int and v >= _SMALLEST_SIZE
    }
    tree = ast.parse((repo / integration.kernel_module).read_text())
    guards = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == integration.guard]
    assert len(guards) == 1, f"{integration.kernel_module} defines no guard {integration.guard}"
    found = [n.value for n in ast.walk(guards[0]) if isinstance(n, ast.Constant) and type(n.value) is int]
    return sorted(v for v in found if v in sizes)


def test_coverage(repo: Path, integration: Integration) -> tuple[list[str], int, set[str]]:
    """(dtypes, distinct shapes over CASES and GPU_CASES, model families named in the case comments) of
    the generated test."""
    text = (repo / integration.test_file).read_text()
    tree = ast.parse(text)
    lists: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            lists[node.targets[0].id] = node.value
    dtypes = [ast.unparse(e) for e in lists["DTYPES"].elts]  # type: ignore[attr-defined]
    cases = [ast.literal_eval(e) for name in ("CASES", "GPU_CASES") for e in lists[name].elts]  # type: ignore[attr-defined]
    shapes = {tuple(sorted((k, v) for k, v in c.items() if type(v) is int)) for c in cases}
    families = set(re.findall(r"# \S+ sizes \(([\w.-]+)\)", text))
    return dtypes, len(shapes), families


def long_lines(repo: Path, integration: Integration, width: int) -> list[str]:
    """Lines of the generated test and benchmark longer than the engine's limit (formatters wrap code,
    not comments or strings, so these are the generator's to keep short)."""
    out = []
    for path in (integration.test_file, integration.bench_file):
        if path is None:
            continue
        for number, line in enumerate((repo / path).read_text().splitlines(), 1):
            if len(line) > width:
                out.append(f"{path}:{number}: {len(line)} > {width}")
    return out


def assert_reviewable(repo: Path, integration: Integration, task_dir: Path, width: int) -> None:
    assert long_lines(repo, integration, width) == []
    assert guard_size_literals(repo, integration, task_dir) == []
    dtypes, shapes, families = test_coverage(repo, integration)
    assert len(dtypes) >= 2 and shapes >= 4 and len(families) >= 2, (dtypes, shapes, families)
    checked = task_float_dtypes(load_task(task_dir))
    assert {d.removeprefix("torch.") for d in dtypes} <= checked, (dtypes, checked)
    text = (repo / integration.test_file).read_text()
    assert "checked by kernelbot's evaluator" not in text
