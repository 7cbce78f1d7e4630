"""The trace of one task: its reference's signature read from source, its graphs, or why there are none."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evolution.writers.fusion.model import TraceReport
from evolution.writers.fusion.trace.capture import trace_cases
from evolution.writers.tracing.errors import TraceError
from evolution.writers.tracing.signature import entry_function, resolve_defaults


def trace_task(task_dir: str, device: str = "cpu") -> TraceReport:
    import torch

    from evaluators.errors import KernelbotError
    from evaluators.task import load_task

    task = load_task(task_dir)
    try:
        reference = task.load_reference()
        signature, returns, params, constants = _signature(task.reference_path, task.entry, reference)
        graphs = trace_cases(task, reference, device)
    except TraceError as exc:
        return TraceReport(error=str(exc), torch_version=torch.__version__)
    except KernelbotError as exc:  # the task's reference or inputs fail to load or run
        return TraceReport(error=f"cannot trace the task: {exc}", torch_version=torch.__version__)
    return TraceReport(
        graphs=tuple(graphs),
        signature=signature,
        returns=returns,
        params=params,
        constants=constants,
        torch_version=torch.__version__,
    )


def _signature(
    path: Path, entry: str, reference: Callable[..., Any]
) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    fn = entry_function(path, entry)
    params = tuple(a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs])
    if fn.args.vararg is not None or fn.args.kwarg is not None:
        raise TraceError(f"{entry} takes *args or **kwargs, which a kernel entry cannot mirror")
    # Names, kinds and defaults are the signature a caller sees; the annotations name engine types
    # (torch.LongTensor, engine classes) that a candidate need not and should not read.
    for argument in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
        argument.annotation = None
    constants = resolve_defaults(fn.args, reference)
    return ast.unparse(fn.args), "", params, constants
