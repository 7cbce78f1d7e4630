"""Run as a subprocess by test_real_sources: call each released original function (imported through
original_loader) and the extracted reference on the same inputs, and print one JSON verdict per target.

    python compare_original.py SOURCE_ROOT PACKAGE JOBS.json
    JOBS.json: [{"task": dir, "module": "sglang.srt...", "qualname": "RMSNorm.forward_native"}]
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # kernelbot itself

import torch

from evaluators.task import load_task
from tests.extractors.original_loader import load_original, original_modules


def tensors(value, path="out"):  # type: ignore[no-untyped-def]
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from tensors(item, f"{path}[{i}]")


def compare(job: dict) -> str:
    task = load_task(job["task"])
    reference = task.load_reference()
    toml = (Path(job["task"]) / "task.toml").read_text()
    attribute_params, bound_callables = _extraction_tables(toml)
    try:
        module = load_original(job["module"])
    except Exception as exc:
        return f"original not importable: {type(exc).__name__}: {exc}"[:300]
    owner = module
    parts = job["qualname"].split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    for case in task.cases:
        args, kwargs = task.make_inputs(case, 3, "cpu")
        ref_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        ref_kwargs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        with torch.no_grad():
            want = reference(*ref_args, **ref_kwargs)
            if len(parts) == 1:
                got = getattr(module, parts[0])(*args, **kwargs)
            else:
                obj = owner.__new__(owner)
                defaults = {n: p.default for n, p in inspect.signature(reference).parameters.items()}
                for attr, param in attribute_params.items():
                    value = kwargs.pop(param) if param in kwargs else defaults[param]
                    object.__setattr__(obj, attr, value)
                for attr, function in bound_callables.items():
                    object.__setattr__(obj, attr, getattr(module, function))
                got = getattr(owner, parts[-1])(obj, *args, **kwargs)
        pairs = list(zip(tensors(want), tensors(got), strict=False))
        pairs += [
            ((f"arg{i}", a), (f"arg{i}", b))
            for i, (a, b) in enumerate(zip(ref_args, args, strict=True))
            if isinstance(a, torch.Tensor)
        ]
        pairs += [
            ((k, v), (k, kwargs[k]))
            for k, v in ref_kwargs.items()
            if isinstance(v, torch.Tensor) and k in kwargs
        ]
        if len(list(tensors(want))) != len(list(tensors(got))):
            return f"case {case.name}: {len(list(tensors(want)))} outputs vs {len(list(tensors(got)))}"
        for (name, a), (_, b) in pairs:
            if a.shape != b.shape or a.dtype != b.dtype or not torch.equal(a, b):
                return f"case {case.name}: {name} differs"
    return "equal"


def _extraction_tables(toml: str) -> tuple[dict[str, str], dict[str, str]]:
    import tomllib

    extraction = tomllib.loads(toml).get("extraction", {})
    return dict(extraction.get("attribute_params", {})), dict(extraction.get("bound_callables", {}))


def main() -> None:
    root, package, jobs_path = sys.argv[1], sys.argv[2], sys.argv[3]
    jobs = json.loads(Path(jobs_path).read_text())
    results = {}
    with original_modules(Path(root), (package,)):
        for job in jobs:
            try:
                results[job["qualname"]] = compare(job)
            except Exception as exc:  # report, do not crash: the test asserts on the verdicts
                results[job["qualname"]] = f"error: {type(exc).__name__}: {exc}"[:300]
    print("KB-RESULTS " + json.dumps(results))


if __name__ == "__main__":
    main()
