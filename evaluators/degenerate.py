"""Refuse tasks whose reference barely depends on its inputs (class 12).

If, for some case, the reference's answer for one seed would pass as the answer for every other seed (every
returned tensor and every mutated argument within tolerance), a kernel that returns a constant is "correct"
and the search would happily evolve one. Extractors call check_degenerate before writing a task; the
correctness stage applies degenerate_reason to each case's reference answers as it judges a candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from evaluators.correctness.bits import changed_elements
from evaluators.correctness.compare import compare_tensors, flatten_outputs
from evaluators.correctness.tolerances import tolerance_for
from evaluators.errors import TaskError
from evaluators.task import Case, Task

DEFAULT_SEEDS = (11, 23, 37)


def _observe(reference: Callable[..., Any], task: Task, case: Case, seed: int, device: str) -> dict[str, Any]:
    """Everything the reference produces for one seed: return leaves and mutated arguments, by name."""
    try:
        args, kwargs = task.make_inputs(case, seed, device)
        flat_in = [*args, *kwargs.values()]
        before = [t.detach().clone() if isinstance(t, torch.Tensor) else None for t in flat_in]
        with torch.no_grad():
            out = reference(*args, **kwargs)
    except TaskError:
        raise
    except Exception as exc:  # inputs.py or reference.py broken on this case
        raise TaskError(f"task {task.name!r}, case {case.name!r}: inputs or reference fail: {exc}") from exc
    seen: dict[str, Any] = dict(flatten_outputs(out))
    for i, (old, new) in enumerate(zip(before, flat_in, strict=True)):
        if old is not None and changed_elements(old, new):
            seen[f"argument {i}"] = new
    return seen


def _constant_passes(first: Any, other: Any, task: Task) -> bool:
    if isinstance(first, torch.Tensor) and isinstance(other, torch.Tensor):
        if first.shape != other.shape or first.dtype != other.dtype:
            return False
        return compare_tensors(other, first, tolerance_for(other.dtype, task), "x").ok
    return type(first) is type(other) and first == other


def check_degenerate(
    task: Task,
    device: str,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    *,
    cases: Sequence[Case] | None = None,
    reference: Callable[..., Any] | None = None,
) -> str | None:
    """None for a healthy task, else the reason it is degenerate (which case, which outputs)."""
    seeds = tuple(dict.fromkeys(seeds))
    if len(seeds) < 2:
        raise ValueError("check_degenerate needs at least two distinct seeds")
    reference = reference or task.load_reference()
    for case in [c for c in (cases if cases is not None else task.cases) if not c.is_captured]:
        runs = [_observe(reference, task, case, seed, device) for seed in seeds]
        reason = degenerate_reason(task, case, runs)
        if reason is not None:
            return reason
    return None


def degenerate_reason(task: Task, case: Case, runs: Sequence[dict[str, Any]]) -> str | None:
    """Why `case` is degenerate, given what the reference produced for two or more seeds (`runs`: each its
    return leaves and mutated arguments by name); None when it is not. The correctness stage calls this on
    the reference answers it computes anyway, so judging a candidate does not run the reference again."""
    produced = {k: v for k, v in runs[0].items() if v is not None}
    if not produced:
        return (
            f"case {case.name!r}: the reference returns nothing and mutates no argument, so there is "
            "nothing to compare a candidate against"
        )
    if any(set(run) != set(runs[0]) for run in runs[1:]):
        return None  # the set of mutated arguments depends on the values: certainly not constant
    if all(_constant_passes(runs[0][name], run[name], task) for run in runs[1:] for name in runs[0]):
        names = ", ".join(sorted(produced))
        return (
            f"case {case.name!r}: the reference's outputs ({names}) for one seed pass as the answer for "
            f"all {len(runs)} seeds (near-constant, or below tolerance), so a constant would pass; "
            "make the outputs depend on the inputs (inputs.py: vary the values with the seed, avoid "
            "saturating or vanishing outputs)"
        )
    return None
