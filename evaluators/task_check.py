"""Checks a task before any candidate code is loaded, so that a fault of the task is named as the task's and
never blamed on the candidate: the smallest case (and every case with a negative integer parameter, the usual
sign of a size typed wrong) must build its inputs, and the reference must run on the smallest one and produce
something to compare (a return value or a written argument).

The worker calls this while it is still trusted (before the candidate is imported); a fault found here is
sent to the parent as a task error, which the CLI reports on one line with exit 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from evaluators.correctness.bits import changed_elements
from evaluators.correctness.compare import flatten_outputs
from evaluators.errors import TaskError
from evaluators.task import Case, Task


def check_task(
    task: Task, reference: Callable[..., Any], smallest: Case, seed: int, device: str
) -> tuple[tuple, dict]:
    """The inputs of `smallest` for `seed`; raises TaskError naming the task's fault."""
    for case in [c for c in task.cases if not c.is_captured and _has_negative(c) and c is not smallest]:
        build_inputs(task, case, seed, device)
    args, kwargs = build_inputs(task, smallest, seed, device)
    flat = [*args, *kwargs.values()]
    before = [t.detach().clone() if isinstance(t, torch.Tensor) else None for t in flat]
    try:
        with torch.no_grad():  # on the inputs themselves: the compile stage only needs their shapes after
            out = reference(*args, **kwargs)
    except Exception as exc:  # the reference fails on its own task's inputs
        raise TaskError(
            f"task {task.name!r}: the reference fails on case {smallest.name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    written = any(
        old is not None and isinstance(new, torch.Tensor) and changed_elements(old, new) > 0
        for old, new in zip(before, flat, strict=True)
    )
    if not [v for _, v in flatten_outputs(out) if v is not None] and not written:
        raise TaskError(
            f"task {task.name!r}: the reference returns None and writes none of its arguments on case "
            f"{smallest.name!r}, so there is nothing to compare a candidate with"
        )
    return args, kwargs


def build_inputs(task: Task, case: Case, seed: int, device: str) -> tuple[tuple, dict]:
    try:
        return task.make_inputs(case, seed, device)
    except TaskError:
        raise
    except Exception as exc:  # inputs.py is the task's code: its failure is the task's
        negative = {k: v for k, v in case.params.items() if _negative(v)}
        hint = f" (negative parameters: {negative})" if negative else ""
        raise TaskError(
            f"task {task.name!r}: {task.inputs_path.name} fails on case {case.name!r}{hint}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _has_negative(case: Case) -> bool:
    return any(_negative(v) for v in case.params.values())


def _negative(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value < 0
