"""Compile a candidate's Triton kernels for an NVIDIA GPU (sm_90: H100, H200) on a machine without one.

Triton's interpreter accepts code the GPU compiler rejects (a non-constexpr global, an unsupported cast, a
layout it cannot lower, the type of a constant, a shape in an unrolled loop), so CPU-only CI would not
notice a candidate that cannot run on the target. The candidate's host code runs on CPU tensors from the
task's make_inputs, with `JITFunction.run` replaced by a stand-in that compiles each launch (to a cubin,
through the ptxas bundled with Triton) instead of executing it: the steps a GPU takes before a first
launch. Nothing runs on a device and no value is checked (correctness is the evaluator's). Run it without
TRITON_INTERPRET, with the Triton you care about first on PYTHONPATH (the H200's image has 3.6).

    PYTHONPATH=. python bench/cuda_compile_check.py TASK CANDIDATE.py [--arch 90] [--json OUT.json]

compiles each distinct launch on every case of the task once and prints it with its registers per thread
and spill bytes (cuobjdump); `--json` writes them; exit 0 when every one compiled, 1 otherwise.

    PYTHONPATH=. python bench/cuda_compile_check.py < JOBS.json

reads a JSON list of {"task": dir, "candidate": file, "params": {...}} (with "entry" where the file names
the task's entry otherwise: a module integrate writes, called with the reference's arguments) and prints
one JSON line per launch: its job, whether an identical launch of the same file was already compiled, a
digest of its PTX without source locations or the kernel's name, and a digest of its instruction counts
(so that two files' launches can be told to run the same instructions, or the same ones in another
order); exit 1 at the first failure.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import inspect
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
POINTER_TYPES = {
    torch.float32: "*fp32",
    torch.float16: "*fp16",
    torch.bfloat16: "*bf16",
    torch.float64: "*fp64",
    torch.int32: "*i32",
    torch.int64: "*i64",
    torch.int16: "*i16",
    torch.int8: "*i8",
    torch.uint8: "*u8",
    torch.bool: "*i1",
}


class Launch:
    """One kernel launch as the compiler sees it: Triton's signature, the constexpr values and the launch
    options (num_warps, ...), read from the arguments the host code passed."""

    def __init__(self, fn: JITFunction, args: tuple, kwargs: dict[str, Any]) -> None:
        kwargs = dict(kwargs)
        self.fn = fn
        self.options = {k: kwargs.pop(k) for k in LAUNCH_OPTIONS if k in kwargs}
        bound = inspect.signature(fn.fn).bind(*args, **kwargs)
        bound.apply_defaults()
        self.signature: dict[str, str] = {}
        self.constexprs: dict[str, Any] = {}
        for param, (name, value) in zip(fn.params, bound.arguments.items(), strict=True):
            if param.is_constexpr:
                self.signature[name] = "constexpr"
                self.constexprs[name] = value
            elif isinstance(value, torch.Tensor):
                self.signature[name] = POINTER_TYPES[value.dtype]
            else:
                self.signature[name] = _scalar_type(value)

    def key(self) -> str:
        """Equal for two launches that compile to one specialisation. Two files may hold kernels of the
        same name with different bodies: the file is part of it."""
        where = [self.fn.fn.__code__.co_filename, self.fn.fn.__qualname__]
        constexprs = repr(sorted(self.constexprs.items()))
        return json.dumps([*where, self.signature, constexprs, self.options], default=str)

    def compile(self, arch: int) -> Any:
        source = ASTSource(self.fn, self.signature, self.constexprs)
        return triton.compile(source, target=GPUTarget("cuda", arch, 32), options=self.options)


def _scalar_type(value: object) -> str:
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"unsupported kernel argument {value!r}")


def _recording(launches: list[Launch]) -> Callable[..., None]:
    """A stand-in for `JITFunction.run` that keeps each launch instead of running it."""

    def run(self: JITFunction, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> None:
        launches.append(Launch(self, args, kwargs))

    return run


def _import(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- TASK CANDIDATE: every case, each specialisation once, with its resources ----------------------------


def compile_candidate(task_dir: Path, candidate: Path, arch: int) -> list[dict[str, Any]]:
    """Every distinct specialisation the candidate launches on the task's cases, compiled: per kernel its
    constexprs and options, and whether it compiled (the error where not; registers, spills and shared
    memory where it did)."""
    from evaluators.task import load_task

    launches: list[Launch] = []
    JITFunction.run = _recording(launches)
    task = load_task(task_dir)
    entry = getattr(_import(candidate, "kb_compile_check_candidate"), task.entry)
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
    for launch in launches:
        if launch.key() in seen:
            continue
        seen.add(launch.key())
        result: dict[str, Any] = {"kernel": launch.fn.fn.__name__, "constexprs": launch.constexprs}
        result["options"] = launch.options
        try:
            compiled = launch.compile(arch)
        except Exception as exc:  # any compiler failure is the finding
            result.update(ok=False, error=f"{type(exc).__name__}: {str(exc)[-2000:]}")
        else:
            result.update(ok=True, shared=getattr(compiled.metadata, "shared", None), **_resources(compiled))
        results.append(result)
    return results


def _resources(compiled: Any) -> dict[str, int | None]:
    """Registers per thread and stack (spill) bytes of the cubin, from cuobjdump; None when unavailable."""
    from evaluators.subprocesses import run

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    cubin = compiled.asm.get("cubin") if hasattr(compiled, "asm") else None
    if cubin is None or not tool.is_file():
        return {"registers": None, "spill_stores": None}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(cubin)
        handle.flush()
        done = run([str(tool), "--dump-resource-usage", handle.name], timeout_s=None)
    registers = re.search(r"REG:(\d+)", done.stdout)
    spills = re.search(r"STACK:(\d+)", done.stdout)
    return {
        "registers": int(registers.group(1)) if registers else None,
        "spill_stores": int(spills.group(1)) if spills else None,
    }


def check_candidate(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path)
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument("--json", type=Path, default=None)
    options = parser.parse_args(argv)
    results = compile_candidate(options.task, options.candidate, options.arch)
    for result in results:
        status = f"ok ({result.get('registers')} registers)" if result["ok"] else f"FAILED: {result['error']}"
        print(f"{result['kernel']} {result['constexprs']}: {status}")
    if options.json is not None:
        report = {"triton": triton.__version__, "kernels": results}
        options.json.write_text(json.dumps(report, indent=2, default=str))
    return 0 if results and all(r["ok"] for r in results) else 1


# --- JOBS on stdin: one line a launch, with digests of what it compiled to ------------------------------


class _Digests:
    """Each distinct launch compiled once for sm_90 and reported as a JSON line with its PTX digests."""

    def __init__(self) -> None:
        self.ptx: dict[str, str] = {}  # a launch's key -> its PTX digest
        self.instructions: dict[str, str] = {}  # a launch's key -> the digest of its instruction counts

    def line(self, job: int, launch: Launch) -> str:
        key = launch.key()
        cached = key in self.ptx
        if not cached:
            ptx = launch.compile(90).asm["ptx"]
            self.ptx[key] = _machine_code_digest(ptx, launch.fn.fn.__name__)
            self.instructions[key] = _instruction_digest(ptx)
        line = {"job": job, "kernel": launch.fn.fn.__name__, "signature": launch.signature}
        line |= {"options": launch.options, "cached": cached, "ptx": self.ptx[key]}
        line["instructions"] = self.instructions[key]
        return json.dumps(line)


def _machine_code_digest(ptx: str, kernel: str) -> str:
    """The PTX without what names where it came from (source lines, file names, the kernel's name): two
    launches of equal digests run the same instructions, whatever the Python text they were written in."""
    kept = [
        line
        for line in _without_debug_sections(ptx).splitlines()
        if not line.lstrip().startswith((".loc", ".file", "//"))
    ]
    return hashlib.sha256("\n".join(kept).replace(kernel, "KERNEL").encode()).hexdigest()[:16]


def _instruction_digest(ptx: str) -> str:
    """How many times the kernel's code uses each instruction, whatever their order and register numbers:
    equal for two kernels whose statements the compiler received in another order."""
    counts: dict[str, int] = {}
    for line in _without_debug_sections(ptx).splitlines():
        text = line.strip()
        if text and not text.startswith((".", "//", "$", "{", "}", "(", ")")) and not text.endswith(":"):
            opcode = text.split()[0]
            counts[opcode] = counts.get(opcode, 0) + 1
    return hashlib.sha256(json.dumps(sorted(counts.items())).encode()).hexdigest()[:16]


def _without_debug_sections(ptx: str) -> str:
    return ptx.split(".section\t.debug", 1)[0].split(".section .debug", 1)[0]  # DWARF: file names


def check_jobs(jobs: list[dict[str, Any]]) -> int:
    from evaluators.task import Case, load_task
    from kernelbot.integrate.drop_unread_params import called_as_the_reference

    launches: list[Launch] = []
    JITFunction.run = _recording(launches)
    digests = _Digests()
    for i, job in enumerate(jobs):
        task = load_task(Path(job["task"]))
        candidate = getattr(_import(Path(job["candidate"]), f"candidate_{i}"), job.get("entry") or task.entry)
        if "entry" in job:  # a module integrate writes: its entry takes only the arguments it reads
            candidate = called_as_the_reference(candidate, inspect.signature(task.load_reference()))
        args, kwargs = task.make_inputs(Case(f"job {i}", dict(job["params"])), 0, "cpu")
        launches.clear()
        try:
            candidate(*args, **kwargs)
            for launch in launches:
                print(digests.line(i, launch), flush=True)
        except Exception as exc:
            print(f"{job['candidate']} {job['params']}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get("TRITON_INTERPRET"):
        print("unset TRITON_INTERPRET: the interpreter replaces the compiler", file=sys.stderr)
        return 2
    return check_candidate(argv) if argv else check_jobs(json.load(sys.stdin))


if __name__ == "__main__":
    sys.exit(main())
