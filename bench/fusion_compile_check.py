"""Compile a candidate's Triton kernels for a GPU target on a machine without that GPU (or any GPU).

    PYTHONPATH=. python bench/fusion_compile_check.py TASK CANDIDATE.py [--arch 90] [--json OUT.json]

The candidate's entry runs on every case's inputs (on the CPU) with Triton's launcher replaced by a recorder:
each launch's arguments give the kernel's signature and constexpr values, and triton.compile builds that
specialisation for `cuda:<arch>` through ptxas (bundled with Triton) — the steps a GPU would take before the
first launch, so a kernel that would not compile there fails here. Nothing runs on a device and no value is
checked: correctness is the evaluator's. Run it with the Triton you care about first on PYTHONPATH (the H200
has 3.6). Exit 0 when every kernel compiled, 1 otherwise; --json writes what was compiled (registers, spills,
shared memory per kernel and specialisation).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

from evaluators.subprocesses import run

_POINTERS = {
    "float32": "*fp32",
    "bfloat16": "*bf16",
    "float16": "*fp16",
    "float64": "*fp64",
    "int64": "*i64",
    "int32": "*i32",
    "int16": "*i16",
    "int8": "*i8",
    "uint8": "*u8",
    "bool": "*i1",
}


def _signature(fn: Any, args: tuple, kwargs: dict) -> tuple[dict[str, str], dict[str, Any]]:
    import torch

    names = list(inspect.signature(fn.fn).parameters)
    bound = dict(zip(names, args, strict=False))
    bound.update({k: v for k, v in kwargs.items() if k in names})
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for position, name in enumerate(names):
        value = bound[name]
        if fn.params[position].is_constexpr:
            constexprs[name] = value
            signature[name] = "constexpr"
        elif torch.is_tensor(value):
            signature[name] = _POINTERS[str(value.dtype).removeprefix("torch.")]
        elif isinstance(value, bool):
            signature[name] = "i1"
        elif isinstance(value, int):
            signature[name] = "i64" if abs(value) >= 2**31 else "i32"
        elif isinstance(value, float):
            signature[name] = "fp32"
        else:
            raise TypeError(f"{fn.fn.__name__}: argument {name} is a {type(value).__name__}")
    return signature, constexprs


def compile_candidate(task_dir: Path, candidate: Path, arch: int) -> list[dict[str, Any]]:
    """Every distinct (kernel, signature, constexprs) the candidate launches on the task's cases, compiled."""
    os.environ.pop("TRITON_INTERPRET", None)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    from evaluators.task import load_task

    launches: list[tuple[Any, tuple, dict]] = []

    def record(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> None:
        launches.append((self, args, kwargs))

    JITFunction.run = record  # type: ignore[method-assign]
    task = load_task(task_dir)
    spec = importlib.util.spec_from_file_location("kb_compile_check_candidate", candidate)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entry = getattr(module, task.entry)
    import torch

    available = torch.cuda.is_available
    torch.cuda.is_available = lambda: True  # the host code takes its GPU path (the inputs stay on the CPU)
    try:
        for case in task.cases:
            args, kwargs = task.make_inputs(case, 0, "cpu")
            entry(*args, **kwargs)
    finally:
        torch.cuda.is_available = available
    results: list[dict[str, Any]] = []
    seen: set[str] = set()
    target = GPUTarget("cuda", arch, 32)
    for fn, args, kwargs in launches:
        signature, constexprs = _signature(fn, args, kwargs)
        options = {k: kwargs[k] for k in ("num_warps", "num_stages") if k in kwargs}
        key = json.dumps([fn.fn.__name__, signature, constexprs, options], sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        record_ = {"kernel": fn.fn.__name__, "constexprs": constexprs, "options": options}
        try:
            compiled = triton.compile(ASTSource(fn, signature, constexprs), target=target, options=options)
        except Exception as exc:  # any compiler failure is the finding
            record_.update(ok=False, error=f"{type(exc).__name__}: {str(exc)[-2000:]}")
        else:
            record_.update(ok=True, shared=getattr(compiled.metadata, "shared", None), **_resources(compiled))
        results.append(record_)
    return results


def _resources(compiled: Any) -> dict[str, int | None]:
    """Registers per thread and stack (spill) bytes of the cubin, from cuobjdump; None when unavailable."""
    import re
    import tempfile

    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    cubin = compiled.asm.get("cubin") if hasattr(compiled, "asm") else None
    if cubin is None or not tool.is_file():
        return {"registers": None, "spill_stores": None}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(cubin)
        handle.flush()
        command = [str(tool), "--dump-resource-usage", handle.name]
        done = run(command, timeout_s=None)
    registers = re.search(r"REG:(\d+)", done.stdout)
    spills = re.search(r"STACK:(\d+)", done.stdout)
    return {
        "registers": int(registers.group(1)) if registers else None,
        "spill_stores": int(spills.group(1)) if spills else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path)
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument("--json", type=Path, default=None)
    options = parser.parse_args(argv)
    results = compile_candidate(options.task, options.candidate, options.arch)
    import triton

    for result in results:
        status = f"ok ({result.get('registers')} registers)" if result["ok"] else f"FAILED: {result['error']}"
        print(f"{result['kernel']} {result['constexprs']}: {status}")
    if options.json is not None:
        options.json.write_text(
            json.dumps({"triton": triton.__version__, "kernels": results}, indent=2, default=str)
        )
    return 0 if results and all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
