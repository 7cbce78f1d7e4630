"""Runs a freshly written task's reference on its own inputs: confirms which arguments it really writes in
place (cloning every tensor argument before the call and comparing after), and refuses degenerate tasks whose
outputs barely change from seed to seed (any constant would pass them)."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluators.static.facts import host_arguments
from evaluators.task import Task, load_task
from extractors.signature import Param


@dataclass
class ProbeResult:
    ran: bool
    error: str = ""
    case: str = ""
    mutated: list[str] = field(default_factory=list)  # argument names written by the reference
    outputs: list[str] = field(default_factory=list)  # "return[0]: float32[1, 256]" ...
    degenerate: str = ""  # why the task is degenerate ("" when it is not)
    # arguments the inputs keep on the CPU whatever the device (`seq_lens.cpu()`), as the evaluator finds them
    host: list[str] = field(default_factory=list)


def probe_task(root: Path, signature: list[Param], device: str = "cpu", seeds: int = 3) -> ProbeResult:
    import torch

    task = load_task(root)
    case = next((c for c in task.cases if not c.is_captured), task.cases[0])
    try:
        reference = task.load_reference()
        args, kwargs = task.make_inputs(case, 0, device)
        names = _argument_names(signature, len(args))
        before = {n: v.clone() for n, v in _named(args, kwargs, names) if isinstance(v, torch.Tensor)}
        with torch.no_grad():
            result = reference(*args, **kwargs)
    except Exception as exc:  # the reference or inputs are user code: report whatever it raised
        return ProbeResult(False, error=_short_error(exc), case=case.name)
    mutated = [n for n, v in _named(args, kwargs, names) if n in before and not _same(before[n], v)]
    outputs = [f"{path}: {_describe(t)}" for path, t in _flatten(result, "return")]
    probe = ProbeResult(
        True, case=case.name, mutated=mutated, outputs=outputs, host=sorted(host_arguments(task))
    )
    try:
        probe.degenerate = _degenerate(task, reference, case, names, mutated, device, seeds)
    except Exception as exc:  # another case or seed fails: the inputs are wrong, not the task degenerate
        probe.ran, probe.error = False, f"with other cases/seeds: {_short_error(exc)}"
    return probe


def check_degenerate(task: Task, device: str) -> str | None:
    """The judge's verdict (evaluators.degenerate) when that module exists: "" healthy, else the reason;
    None when it is missing, and this module's own check is used instead."""
    try:
        from evaluators.degenerate import check_degenerate as judge_check
    except ImportError:
        return None
    return judge_check(task, device) or ""


def _degenerate(
    task: Task, reference: Any, case: Any, names: list[str], mutated: list[str], device: str, seeds: int
) -> str:
    import torch

    judged = check_degenerate(task, device)
    if judged is not None:
        return judged
    runs: list[list[tuple[str, torch.Tensor]]] = []
    for seed in range(seeds):
        args, kwargs = task.make_inputs(case, seed, device)
        with torch.no_grad():
            result = reference(*args, **kwargs)
        outs = list(_flatten(result, "return"))
        outs += [(n, v) for n, v in _named(args, kwargs, names) if n in mutated]
        runs.append(outs)
    if not runs[0]:
        return "the reference returns no tensor and writes no argument: there is nothing to compare"
    if case.is_captured:
        return ""
    constant = []
    for i, (path, first) in enumerate(runs[0]):
        others = [run[i][1] for run in runs[1:] if i < len(run)]
        if others and all(_close(first, o) for o in others):
            constant.append(path)
    if len(constant) == len(runs[0]):
        return (
            f"every output ({', '.join(constant)}) is the same for seeds 0..{seeds - 1} of case "
            f"{case.name!r}: a constant would pass; make the inputs vary with the seed"
        )
    return ""


def _argument_names(signature: list[Param], n_positional: int) -> list[str]:
    positional = [p.name for p in signature if p.kind == "positional"]
    return [positional[i] if i < len(positional) else f"args[{i}]" for i in range(n_positional)]


def _named(args: tuple, kwargs: dict, names: list[str]) -> list[tuple[str, Any]]:
    return [*zip(names, args, strict=False), *kwargs.items()]


def _same(a: Any, b: Any) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))) and bool(
            torch.equal(torch.isnan(a), torch.isnan(b))
        )
    return bool(torch.equal(a, b))


def _close(a: Any, b: Any) -> bool:
    import torch

    if a.shape != b.shape:
        return False
    if not (a.is_floating_point() or a.is_complex()):
        return bool(torch.equal(a, b))
    a64, b64 = a.detach().double(), b.detach().double()
    scale = max(float(a64.abs().max()) if a64.numel() else 0.0, 1e-12)
    return bool(((a64 - b64).abs().nan_to_num(0.0) <= 1e-6 * scale).all())


def _flatten(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    import torch

    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _flatten(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, f"{path}[{key!r}]")


def _describe(t: Any) -> str:
    return f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}"


def _short_error(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = next(
        (
            f"{Path(f.filename).name}:{f.lineno}"
            for f in reversed(frames)
            if Path(f.filename).name in ("reference.py", "inputs.py")
        ),
        "",
    )
    return f"{type(exc).__name__}: {exc}" + (f" (at {where})" if where else "")
