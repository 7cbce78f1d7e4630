"""Helpers of the fusion generator's tests: small task directories written from source text, the trace run
in-process, and a candidate checked against the reference on every case plus other dynamic sizes (outputs and
in-place writes, with the evaluator's tolerance table)."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import torch

from evaluators.correctness.tolerances import tolerance_for
from evaluators.task import load_task
from evolution.writers.fusion.generate import Generated, generate
from evolution.writers.fusion.knobs import Knobs
from evolution.writers.fusion.model import TraceReport
from evolution.writers.fusion.trace.task import trace_task

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
_modules = itertools.count()


def write_task(
    root: Path,
    entry: str,
    reference: str,
    inputs: str,
    cases: list[dict[str, Any]],
    *,
    regime: str = "graph",
    dynamic: tuple[str, ...] = ("tokens",),
    extra: str = "",
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "reference.py").write_text(textwrap.dedent(reference))
    (root / "inputs.py").write_text(textwrap.dedent(inputs))
    lines = [f'name = "{entry}"', f'entry = "{entry}"', f'regime = "{regime}"', f"dynamic = {list(dynamic)}"]
    for case in cases:
        lines.append("\n[[cases]]")
        lines += [f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in case.items()]
    (root / "task.toml").write_text("\n".join(lines) + "\n" + textwrap.dedent(extra))
    return root


def trace(root: Path) -> TraceReport:
    report = trace_task(str(root))
    assert not report.error, report.error
    return report


def write(root: Path, report: TraceReport, knobs: Knobs | None = None) -> Generated:
    task = load_task(root)
    return generate(report, knobs or Knobs(), entry=task.entry, task_name=task.name)


def load_entry(source: str, entry: str) -> Any:
    module = types.ModuleType(f"kb_fusion_candidate_{next(_modules)}")
    path = Path(sys.modules[__name__].__file__).parent / f"{module.__name__}.py"
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)  # the candidate is our own generated code
    return getattr(module, entry)


def check(
    root: Path, source: str, *, dynamic_values: tuple[int, ...] = (1, 6), seeds: tuple[int, ...] = (0, 1)
) -> int:
    """Run the candidate and the reference on every case (and each case at other dynamic sizes); returns how
    many comparisons were made. Raises AssertionError naming the case and output that differ."""
    task = load_task(root)
    reference = task.load_reference()
    candidate = load_entry(source, task.entry)
    compared = 0
    for case in task.cases:
        variants = [case]
        for value in dynamic_values:
            params = dict(case.params)
            for key in task.dynamic:
                if key in params:
                    params[key] = value
            variants.append(dataclasses.replace(case, params=params))
        for variant, seed in itertools.product(variants, seeds):
            args, kwargs = task.make_inputs(variant, seed, DEVICE)
            mine_args, mine_kwargs = copy.deepcopy(args), copy.deepcopy(kwargs)
            expected = reference(*args, **kwargs)
            actual = candidate(*mine_args, **mine_kwargs)
            where = f"case {variant.name} {dict(variant.params)} seed {seed}"
            _compare(expected, actual, where, "return")
            for i, (a, b) in enumerate(zip(args, mine_args, strict=True)):
                _compare(a, b, where, f"argument {i}")
            for name in kwargs:
                _compare(kwargs[name], mine_kwargs[name], where, f"argument {name}")
            compared += 1
    return compared


def _compare(expected: Any, actual: Any, where: str, name: str) -> None:
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), (
            f"{where}: {name} structure"
        )
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _compare(e, a, where, f"{name}[{i}]")
        return
    if not torch.is_tensor(expected):
        assert expected == actual, f"{where}: {name}: {actual!r} != {expected!r}"
        return
    assert torch.is_tensor(actual) and actual.shape == expected.shape, f"{where}: {name} shape {actual.shape}"
    assert actual.dtype == expected.dtype, f"{where}: {name} dtype {actual.dtype} != {expected.dtype}"
    tolerance = tolerance_for(expected.dtype)
    torch.testing.assert_close(
        actual.double(),
        expected.double(),
        atol=tolerance.atol,
        rtol=tolerance.rtol,
        msg=lambda m: f"{where}: {name}: {m}",
    )
