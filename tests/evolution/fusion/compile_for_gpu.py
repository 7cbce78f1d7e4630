"""Compile every Triton kernel a module launches for a CUDA target, on a machine with no GPU: the check that
Triton's interpreter cannot make (it runs `tl.gather`, a reshape or a layout the compiler rejects), run by the
fusion tests on the modules integrate writes.

    python compile_for_gpu.py [--arch 90] TASK_DIR MODULE ENTRY [TASK_DIR MODULE ENTRY ...]

Each entry is called on its task's first case, the inputs made on the CPU; each launch compiles the kernel for
`cuda:<arch>` (Triton's own code generator, LLVM and ptxas, down to a cubin) with the arguments' types and
constexprs instead of running it. Prints a JSON object: per module, the compilations made, or the error of the
first kernel that does not compile (or of an entry that launches nothing). Run it without TRITON_INTERPRET
(the tests clear it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

from evaluators.task import load_task

_POINTER_TYPES = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float64: "fp64",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.bool: "i1",
}


def _arg_type(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "*" + _POINTER_TYPES[value.dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"no Triton type for a launch argument of type {type(value).__name__}")


class Compiler:
    """Stands in for JITFunction.run: compiles for `target` what a launch would run, once per signature."""

    def __init__(self, target: GPUTarget) -> None:
        self.target = target
        self.done: dict[str, str] = {}

    def run(self, fn: JITFunction, args: tuple, kwargs: dict[str, Any]) -> None:
        names = [p.name for p in fn.params]
        options = {k: v for k, v in kwargs.items() if k not in names}
        bound = fn.signature.bind(*args, **{k: v for k, v in kwargs.items() if k in names})
        bound.apply_defaults()
        signature: dict[str, str] = {}
        constexprs: dict[str, Any] = {}
        for param in fn.params:
            value = bound.arguments[param.name]
            if param.is_constexpr or value is None:
                signature[param.name] = "constexpr"
                constexprs[param.name] = value
            else:
                signature[param.name] = _arg_type(value)
        key = f"{fn.__name__} {signature} {constexprs} {options}"
        if key in self.done:
            return
        source = ASTSource(fn, signature, constexprs=constexprs)
        launch = {k: options[k] for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if k in options}
        try:
            compiled = triton.compile(source, target=self.target, options=launch)
        except Exception as exc:
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            where = f"{lines[0]} ... {lines[-1]}" if len(lines) > 1 else lines[0]  # position, then the cause
            raise NotCompiled(f"{fn.__name__} does not compile for sm_{self.target.arch}: {where}") from None
        self.done[key] = f"{fn.__name__}: {len(compiled.asm['cubin'])} bytes of cubin, options {options}"


class NotCompiled(Exception):
    pass


def _import(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"kb_compiled_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_module(task_dir: Path, module: Path, entry: str, compiler: Compiler) -> dict[str, Any]:
    compiler.done = {}
    task = load_task(task_dir)
    args, kwargs = task.make_inputs(task.cases[0], 0, "cpu")
    try:
        with torch.no_grad():
            getattr(_import(module), entry)(*args, **kwargs)
    except NotCompiled as exc:
        return {"compiled": list(compiler.done.values()), "error": str(exc)}
    if not compiler.done:
        return {"compiled": [], "error": f"{entry} launched no kernel on case {task.cases[0].name}"}
    return {"compiled": list(compiler.done.values()), "error": ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument("triples", nargs="+", help="TASK_DIR MODULE ENTRY, repeated")
    options = parser.parse_args(argv)
    if len(options.triples) % 3:
        parser.error("give TASK_DIR MODULE ENTRY for each module")
    compiler = Compiler(GPUTarget("cuda", options.arch, 32))

    def run(self: JITFunction, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> None:
        compiler.run(self, args, kwargs)

    JITFunction.run = run  # type: ignore[method-assign]
    triples = options.triples
    results = {
        triples[k + 1]: compile_module(Path(triples[k]), Path(triples[k + 1]), triples[k + 2], compiler)
        for k in range(0, len(triples), 3)
    }
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
