"""torch.compile's own launch of each kernel, per case (in a subprocess, on the GPU).

    python -m evolution.writers.inductor.compile_launches TASK --device cuda[:N] --out REPORT.json

The Inductor seed is traced once with dynamic shapes, so its kernels take one launch for every size, and
it starts from Inductor's first config. The evaluator's compile baseline is another program:
`torch.compile(reference, dynamic=False)`, compiled for each shape on its own, with Inductor's autotuner
benchmarking its configs there and keeping the fastest. Where those picks differ from the seed's launch,
the seed trails compile with the same kernel body (on an H100, SGLang's RMSNorm at 4096 x 7168).

This compiles the reference as the baseline does, case by case, runs it once so that every kernel is
autotuned, then once more while each launch is recorded: the kernel Inductor named, its kind (from the
name: `triton_per_` a persistent reduction, `triton_red_` a looped one, `triton_poi_` pointwise) and the
config it launched with (block sizes, warps, stages). A kernel the autotuner had one config for is
recorded as launched, since that is compile's launch too. The `tune:compile` move writes those launches
into an Inductor-seeded candidate (evolution.mutators.compile_launch).

Each case holds the GPU lock the evaluator's timing stage holds (evaluators.gpu_lock) while it compiles,
autotunes and runs: the search's evaluations go on meanwhile, and neither times the other's kernels.
Autotuning needs the GPU the candidates run on: on a CPU the report says so and holds no case.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

_KINDS = {"per": "persistent_reduction", "red": "reduction", "poi": "pointwise"}
# Inductor's kernel names (`triton_red_fused_...`), and the seed's for them (`_red_fused_...`).
_KERNEL_NAME = re.compile(r"^(?:triton)?_(per|red|poi)_")


@dataclass(frozen=True)
class CompiledLaunch:
    kernel: str  # Inductor's name (`triton_red_fused_add_mean_mul_pow_rsqrt_0`)
    kind: str  # persistent_reduction | reduction | pointwise | other
    config: dict[str, int]  # block sizes (XBLOCK, R0_BLOCK...), num_warps, num_stages

    @property
    def key(self) -> tuple[str, tuple[tuple[str, int], ...]]:
        return self.kind, tuple(sorted(self.config.items()))


@dataclass(frozen=True)
class CaseLaunches:
    """One case's launches, in order, with what ranks and routes them."""

    variant: str  # the tensor arguments' dtypes, as the capture names a dtype group (`bfloat16`)
    elements: int  # elements of its tensor arguments: the largest case's launch is proposed first
    launches: tuple[CompiledLaunch, ...]


@dataclass(frozen=True)
class CompileLaunchReport:
    device: str
    torch_version: str = ""
    cases: dict[str, CaseLaunches] = field(default_factory=dict)
    error: str = ""  # why no case was recorded (no GPU, the reference does not compile)
    skipped: dict[str, str] = field(default_factory=dict)  # case -> why it holds no launches

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CompileLaunchReport:
        data = json.loads(text)
        cases = {
            name: CaseLaunches(
                case["variant"],
                int(case["elements"]),
                tuple(CompiledLaunch(x["kernel"], x["kind"], dict(x["config"])) for x in case["launches"]),
            )
            for name, case in data.get("cases", {}).items()
        }
        return cls(
            device=data["device"],
            torch_version=data.get("torch_version", ""),
            cases=cases,
            error=data.get("error", ""),
            skipped=dict(data.get("skipped", {})),
        )


def kernel_kind(name: str) -> str:
    """What an Inductor kernel is, read from its name as Inductor or the seed writes it."""
    match = _KERNEL_NAME.match(name)
    return _KINDS[match.group(1)] if match else "other"


def record_task(task_dir: str, device: str) -> CompileLaunchReport:
    import torch

    from evaluators.errors import KernelbotError
    from evaluators.task import load_task
    from evolution.writers.inductor.capture import bound_arguments

    version = torch.__version__
    if not device.startswith("cuda") or not torch.cuda.is_available():
        return CompileLaunchReport(device, version, error="torch.compile's autotuning needs a GPU")
    task = load_task(task_dir)
    try:
        reference = task.load_reference()
    except KernelbotError as exc:
        return CompileLaunchReport(device, version, error=f"cannot load the task's reference: {exc}")
    cases: dict[str, CaseLaunches] = {}
    skipped: dict[str, str] = {}
    for case in task.cases:
        if case.is_captured:
            skipped[case.name] = "a recorded call (its inputs are not built here)"
            continue
        try:
            args, kwargs = task.make_inputs(case, 0, device)
            # Named and ordered as the capture names its dtype groups (capture.bound_arguments).
            arguments = bound_arguments(reference, args, kwargs)
        except Exception as exc:  # the task's inputs fail or do not fit: not this tool's to judge
            skipped[case.name] = f"its inputs cannot be built: {type(exc).__name__}: {exc}"
            continue
        tensors = [v for v in arguments.values() if torch.is_tensor(v)]
        variant = "-".join(dict.fromkeys(str(t.dtype).removeprefix("torch.") for t in tensors))
        elements = sum(t.numel() for t in tensors)
        try:
            cases[case.name] = CaseLaunches(variant, elements, _record_case(reference, args, kwargs))
        except Exception as exc:  # the reference does not compile at this shape: compile has no launch
            skipped[case.name] = f"torch.compile failed: {type(exc).__name__}: {str(exc)[:300]}"
        finally:
            del args, kwargs, arguments, tensors
            torch.cuda.empty_cache()
    return CompileLaunchReport(device, version, cases=cases, skipped=skipped)


def _record_case(reference: Any, args: tuple, kwargs: dict) -> tuple[CompiledLaunch, ...]:
    """Compile the reference for this shape as the evaluator's baseline does (its own load_baseline),
    autotune it, and return the launches of one more call."""
    import torch
    import torch._dynamo

    from evaluators.gpu_lock import GpuLock, device_key
    from evaluators.timing.baselines import COMPILE, load_baseline

    torch._dynamo.reset()
    compiled = load_baseline(COMPILE, reference)
    with GpuLock(device_key(torch.cuda.current_device())), _autotuned_here():
        compiled(*args, **kwargs)  # compiles and autotunes every kernel
        torch.cuda.synchronize()
        with _recorded_launches() as launched:
            compiled(*args, **kwargs)
            torch.cuda.synchronize()
    return tuple(launched)


@contextmanager
def _autotuned_here() -> Iterator[None]:
    """Nothing read from a cache that another torch or another GPU filled: the autotuner must run here."""
    import torch._inductor.config as inductor_config

    if "force_disable_caches" not in inductor_config.get_config_copy():
        yield
        return
    with inductor_config.patch({"force_disable_caches": True}):
        yield


@contextmanager
def _recorded_launches() -> Iterator[list[CompiledLaunch]]:
    """Every CachingAutotuner.run inside the block, with the config its (single, autotuned) launcher
    holds."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    launched: list[CompiledLaunch] = []
    original = CachingAutotuner.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        launched.append(_launch_of(self))
        return result

    CachingAutotuner.run = run  # type: ignore[method-assign]
    try:
        yield launched
    finally:
        CachingAutotuner.run = original  # type: ignore[method-assign]


def _launch_of(autotuner: Any) -> CompiledLaunch:
    name = getattr(autotuner.fn, "__name__", "") or str(getattr(autotuner, "fn", ""))
    launchers = list(getattr(autotuner, "launchers", []) or [])
    config = launchers[0].config if launchers else autotuner.configs[0]
    values = {k: int(v) for k, v in dict(config.kwargs).items() if isinstance(v, int)}
    values["num_warps"] = int(config.num_warps)
    values["num_stages"] = int(config.num_stages)
    return CompiledLaunch(name, kernel_kind(name), values)


if __name__ == "__main__":
    from evolution.writers.tracing.launch import end_traced_process, report_main

    end_traced_process(report_main(__doc__.splitlines()[0], record_task, device="cuda"))
