"""A deliberately naive evaluator, the kind the adversarial suite's cheats are written to fool: reference
first (its result copied out, its memory freed), then the candidate on the same inputs, torch.allclose at
KernelBench's 1e-2, one check per case and perf_counter around repeated calls on the same buffers, listed
shapes only. Run as a script (cheats patch globals, so never inside the test process):

    python naive_harness.py TASK_DIR CHEAT.py [TASK_DIR CHEAT.py ...]   -> one JSON line per pair

KB_NAIVE_DEVICE=cuda runs it on a GPU (where the caching allocator makes c01 fool it every time).
KB_NAIVE_CPU_MATMUL=reduced makes CPU float32 matmuls obey the reduced precision PyTorch's flags ask for (bf16
or TF32 inputs), as CPUs with AMX do, so that the verdicts can be checked for any CPU model on any CPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch

from evaluators.task import load_task

DEVICE = os.environ.get("KB_NAIVE_DEVICE", "cpu")
MAX_NUMEL = 100_000 if DEVICE == "cpu" else 1 << 30

_ORIGINALS = {"allclose": torch.allclose, "perf_counter": time.perf_counter}


def _round_mantissa(x: torch.Tensor, kept_bits: int) -> torch.Tensor:
    """float32 values rounded to `kept_bits` of mantissa, as a reduced-precision matmul unit reads them."""
    dropped = 23 - kept_bits
    bits = x.contiguous().view(torch.int32)
    rounded = (bits + (1 << (dropped - 1))) & ~((1 << dropped) - 1)
    return rounded.view(torch.float32)


def emulate_reduced_cpu_matmul() -> None:
    """Make this process's CPU float32 matmuls honour torch.backends.mkldnn.matmul.fp32_precision on any CPU:
    a CPU without AMX ignores it, one with AMX multiplies bf16 (and TF32 where it has the unit) inputs."""
    kept = {"bf16": 7, "tf32": 10}
    originals = {"matmul": torch.matmul, "mm": torch.mm, "__matmul__": torch.Tensor.__matmul__}

    def reduced(name: str) -> Callable[..., torch.Tensor]:
        original = originals[name]

        def wrapper(a: torch.Tensor, b: torch.Tensor, *rest: object, **kw: object) -> torch.Tensor:
            bits = kept.get(torch.backends.mkldnn.matmul.fp32_precision)
            if bits is not None and a.device.type == "cpu" and a.dtype == b.dtype == torch.float32:
                a, b = _round_mantissa(a, bits), _round_mantissa(b, bits)
            return original(a, b, *rest, **kw)

        return wrapper

    torch.matmul, torch.mm = reduced("matmul"), reduced("mm")
    torch.Tensor.__matmul__ = reduced("__matmul__")


def _restore() -> None:
    torch.allclose = _ORIGINALS["allclose"]
    time.perf_counter = _ORIGINALS["perf_counter"]


def judge_naively(task_dir: Path, cheat: Path) -> dict:
    task = load_task(task_dir)
    reference = task.load_reference()
    spec = importlib.util.spec_from_file_location(f"naive_{cheat.stem}", cheat)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    candidate = getattr(module, task.entry)
    verdict = {"cheat": cheat.name, "passed": True, "reason": ""}
    for case in task.cases:
        args, kwargs = task.make_inputs(case, 0, DEVICE)
        if sum(a.numel() for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)) > MAX_NUMEL:
            continue  # the interpreter is slow; the listed small cases make the point
        result = reference(*args, **kwargs)
        result = args[0] if result is None else result  # in-place task: the mutated first argument
        expected = result.to("cpu", copy=True)
        del result  # the naive part: the reference's memory goes back to the allocator
        out = candidate(*args, **kwargs)
        out = args[0] if out is None else out
        ok = torch.allclose(out.cpu(), expected, atol=1e-2, rtol=1e-2)
        start = time.perf_counter()
        for _ in range(3):
            candidate(*args, **kwargs)
        verdict[f"{case.name}_seconds"] = time.perf_counter() - start
        if not ok:
            verdict.update(passed=False, reason=f"case {case.name} differs")
    return verdict


def main(argv: list[str]) -> None:
    if os.environ.get("KB_NAIVE_CPU_MATMUL") == "reduced":
        emulate_reduced_cpu_matmul()
    for task_dir, cheat in zip(argv[0::2], argv[1::2], strict=True):
        try:
            print(json.dumps(judge_naively(Path(task_dir), Path(cheat))), flush=True)
        except Exception as exc:  # a cheat the naive harness cannot even run
            print(json.dumps({"cheat": Path(cheat).name, "passed": False, "reason": repr(exc)}), flush=True)
        finally:
            _restore()


if __name__ == "__main__":
    main(sys.argv[1:])
