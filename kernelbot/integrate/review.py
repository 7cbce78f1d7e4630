"""What an engine maintainer's review of a change checks, as code: each check reads the change's files (the
work tree, the patch, the task it was judged on) and returns the problems it found, [] when there are none.

Shared by the integration tests (the minirepo and the real-release trees) and by
`bench/target_acceptance.py`, which reviews the bundles `kernelbot target` writes for real releases.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Set as AbstractSet
from pathlib import Path

from evaluators.task import load_task

# Ranks and the like are small numbers; sizes a spec or draft gives (hidden, vocab, experts) are not.
SMALLEST_SIZE = 16


def guard_size_literals(kernel_file: Path, guard: str, task_dir: Path) -> list[int]:
    """Integer literals in the guard's body that equal a size of one of the task's cases: a guard that pins
    the spec's or draft's sizes leaves every other served shape on the slow path."""
    sizes = {
        v
        for case in load_task(task_dir).cases
        for v in case.params.values()
        if type(v) is int and v >= SMALLEST_SIZE
    }
    tree = ast.parse(kernel_file.read_text())
    guards = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == guard]
    if len(guards) != 1:
        raise ValueError(f"{kernel_file} defines no guard {guard}()")
    found = [n.value for n in ast.walk(guards[0]) if isinstance(n, ast.Constant) and type(n.value) is int]
    return sorted(v for v in found if v in sizes)


def guard_name(kernel_file: Path) -> str:
    """The kernel module's guard: its one top-level `can_use_*` function."""
    tree = ast.parse(kernel_file.read_text())
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("can_use_")]
    if len(names) != 1:
        raise ValueError(f"{kernel_file}: expected one can_use_* guard, found {names}")
    return names[0]


def generated_test_coverage(test_file: Path) -> tuple[list[str], int, set[str]]:
    """(dtypes, distinct shapes over CASES and GPU_CASES, model families named in the case comments) of a
    generated test."""
    text = test_file.read_text()
    lists: dict[str, ast.expr] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            lists[node.targets[0].id] = node.value
    dtypes = [ast.unparse(e) for e in _elements(lists.get("DTYPES"))]
    cases = [ast.literal_eval(e) for name in ("CASES", "GPU_CASES") for e in _elements(lists.get(name))]
    shapes = {tuple(sorted((k, v) for k, v in c.items() if type(v) is int)) for c in cases}
    families = set(re.findall(r"# \S+ sizes \(([\w.-]+)\)", text))
    return dtypes, len(shapes), families


def coverage_problems(test_file: Path, checked_dtypes: AbstractSet[str]) -> list[str]:
    """What the issue on mergeable PRs asks of the generated test: >= 2 dtypes, each one the evaluator
    checked, >= 4 shapes from >= 2 model families, and no claim of checks that were not made."""
    dtypes, shapes, families = generated_test_coverage(test_file)
    problems = []
    if len(dtypes) < 2:
        problems.append(f"{test_file.name}: {len(dtypes)} dtype(s) {dtypes}, fewer than 2")
    if shapes < 4:
        problems.append(f"{test_file.name}: {shapes} shape(s), fewer than 4")
    if len(families) < 2:
        problems.append(f"{test_file.name}: model families {sorted(families)}, fewer than 2")
    unchecked = sorted({d.removeprefix("torch.") for d in dtypes} - checked_dtypes)
    if unchecked:
        problems.append(f"{test_file.name}: dtypes {unchecked} that no task case checked")
    if "checked by kernelbot's evaluator" in test_file.read_text():
        problems.append(f"{test_file.name}: claims cases were checked by kernelbot's evaluator")
    return problems


def long_lines(paths: list[Path], width: int) -> list[str]:
    """Lines longer than the engine's limit (formatters wrap code, not comments or strings, so these are the
    generator's to keep short)."""
    out = []
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if len(line) > width:
                out.append(f"{path.name}:{number}: {len(line)} > {width}")
    return out


def removed_lines(patch: str) -> dict[str, int]:
    """Per file of a unified diff, how many of its lines the patch removes (a changed line counts too)."""
    out: dict[str, int] = {}
    current = ""
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            current = line.split(" b/", 1)[-1]
            out.setdefault(current, 0)
        elif line.startswith("-") and not line.startswith("--- "):
            out[current] = out.get(current, 0) + 1
    return out


def _elements(node: ast.expr | None) -> list[ast.expr]:
    return list(node.elts) if isinstance(node, (ast.List, ast.Tuple)) else []


__all__ = [
    "coverage_problems",
    "generated_test_coverage",
    "guard_name",
    "guard_size_literals",
    "long_lines",
    "removed_lines",
]
