"""Compile example candidates' Triton kernels for an sm_90 (H100/H200) GPU on a machine without one.

Triton's interpreter accepts code the GPU compiler rejects (a non-constexpr global, an unsupported cast, a
layout it cannot lower), so CPU-only CI would not notice a candidate that cannot run on the target. This
script runs a candidate's host launcher on CPU tensors built by the task's make_inputs, with
`JITFunction.run` replaced by a stand-in that compiles the launch (to a cubin, ptxas included) instead of
executing it.

Run without TRITON_INTERPRET. Reads a JSON list of {"task": dir, "candidate": file, "params": {...}} on stdin
(with "entry" where the file names the task's entry otherwise: a module integrate writes); prints one JSON
line per kernel launch (its job, whether an identical launch of the same file was
already compiled, and a digest of its PTX without source locations or the kernel's name, so that two
files' launches can be told to run the same instructions); exits 1 at the first failure.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import sys
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

TARGET = GPUTarget("cuda", 90, 32)
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
_compiled: dict[str, str] = {}  # a launch's key -> its PTX digest
_instructions: dict[str, str] = {}  # a launch's key -> the digest of its instruction counts
_job = -1  # the index of the job whose launches are being compiled


def _scalar_type(value: object) -> str:
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"unsupported kernel argument {value!r}")


def compile_instead_of_launch(self: JITFunction, *args, grid, warmup, **kwargs):
    options = {k: kwargs.pop(k) for k in LAUNCH_OPTIONS if k in kwargs}
    bound = inspect.signature(self.fn).bind(*args, **kwargs)
    bound.apply_defaults()
    signature, constexprs = {}, {}
    for index, (param, (name, value)) in enumerate(zip(self.params, bound.arguments.items(), strict=True)):
        if param.is_constexpr:
            signature[name] = "constexpr"
            constexprs[(index,)] = value
        elif isinstance(value, torch.Tensor):
            signature[name] = POINTER_TYPES[value.dtype]
        else:
            signature[name] = _scalar_type(value)
    # Two candidate files may hold kernels of the same name with different bodies: the file is in the key.
    where = [self.fn.__code__.co_filename, self.fn.__qualname__]
    key = json.dumps([*where, signature, repr(sorted(constexprs.items())), options])
    cached = key in _compiled
    if not cached:
        compiled = triton.compile(ASTSource(self, signature, constexprs), target=TARGET, options=options)
        ptx = compiled.asm["ptx"]
        _compiled[key] = _machine_code_digest(ptx, self.fn.__name__)
        _instructions[key] = _instruction_digest(ptx)
    report = {"job": _job, "kernel": self.fn.__name__, "signature": signature, "options": options}
    report["cached"] = cached
    report["ptx"] = _compiled[key]
    report["instructions"] = _instructions[key]
    print(json.dumps(report), flush=True)


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


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _as_the_reference(fn, task_dir: Path, task_toml: str):
    """`fn` called with the task reference's arguments (kernelbot.integrate.drop_unread_params)."""
    from kernelbot.integrate.drop_unread_params import called_as_the_reference

    entry = next(line.split('"')[1] for line in task_toml.splitlines() if line.startswith("entry"))
    reference = getattr(_import(task_dir / "reference.py", f"reference_{_job}"), entry)
    return called_as_the_reference(fn, inspect.signature(reference))


def main() -> int:
    if os.environ.get("TRITON_INTERPRET"):
        print("unset TRITON_INTERPRET: the interpreter replaces the compiler", file=sys.stderr)
        return 2
    global _job
    JITFunction.run = compile_instead_of_launch
    for i, job in enumerate(json.load(sys.stdin)):
        _job = i
        task_dir = Path(job["task"])
        task_toml = (task_dir / "task.toml").read_text()
        entry = job.get("entry") or next(
            line.split('"')[1] for line in task_toml.splitlines() if line.startswith("entry")
        )
        make_inputs = _import(task_dir / "inputs.py", f"inputs_{i}").make_inputs
        candidate = getattr(_import(Path(job["candidate"]), f"candidate_{i}"), entry)
        if "entry" in job:  # a module integrate writes: its entry takes only the arguments it reads
            candidate = _as_the_reference(candidate, task_dir, task_toml)
        args, kwargs = make_inputs(dict(job["params"]), 0, "cpu")
        try:
            candidate(*args, **kwargs)
        except Exception as exc:
            print(f"{job['candidate']} {job['params']}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
