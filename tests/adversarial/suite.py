"""The adversarial suite's catalogue: every cheat with the task it attacks and the hack class it implements,
the legitimate kernels that must pass, and small helpers shared by the suite's tests."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from evaluators.config import EvalConfig
from evaluators.result import EvalResult

HERE = Path(__file__).parent
TASKS = HERE / "tasks"
CHEATS = HERE / "cheats"
LEGIT = HERE / "legit"
EXAMPLES = HERE.parent.parent / "examples" / "tasks"
# Big enough for every case of the suite's own tasks; the example tasks' large cases are skipped.
SUITE_CONFIG = EvalConfig(backend="triton-interpret", interpret_max_numel=70_000)
RUNTIME_ONLY = EvalConfig(backend="triton-interpret", interpret_max_numel=70_000, static_checks=False)


def checkout_pythonpath() -> str:
    """PYTHONPATH for a kernelbot subprocess: this checkout first, then whatever the caller's path holds (a
    machine whose packages live outside the interpreter's site directory, such as a GPU image with carried
    wheels)."""
    repo = HERE.parent.parent
    return os.pathsep.join(p for p in (str(repo), os.environ.get("PYTHONPATH", "")) if p)


def task_dir(name: str) -> Path:
    own = TASKS / name
    return own if own.is_dir() else EXAMPLES / name


@dataclass(frozen=True)
class Cheat:
    file: str
    task: str
    klass: int  # the hack class the cheat implements
    static_klass: int | None = None  # the class the static stage reports first, when it sees the cheat
    cpu_runtime: bool = True  # a runtime detector proves it on CPU (else GPU-only: test_gpu_cheats.py)

    @property
    def path(self) -> Path:
        return CHEATS / self.file

    @property
    def source(self) -> str:
        return self.path.read_text()

    @property
    def id(self) -> str:
        return self.file.removesuffix(".py")


CHEATS_BY_CLASS: tuple[Cheat, ...] = (
    Cheat("c01_allocator_reuse.py", "scale_add", 1),
    Cheat("c02_input_mutation.py", "scale_add", 2),
    Cheat("c03_other_stream.py", "scale_add", 3, static_klass=3, cpu_runtime=False),
    Cheat("c04_threads.py", "scale_add", 4, static_klass=4),
    Cheat("c05_lazy_output.py", "scale_add", 5),
    Cheat("c06_harness_patch.py", "scale_add", 6, static_klass=6),
    Cheat("c06b_patch_evaluator.py", "scale_add", 6, static_klass=16),
    Cheat("c07_output_caching.py", "scale_add", 7, static_klass=7),
    Cheat("c08_drift.py", "scale_add", 8, static_klass=8),
    Cheat("c09_persisting_l2.py", "scale_add", 9, static_klass=9),
    Cheat("c10_precision_downgrade.py", "matmul_fp32", 10, static_klass=10),
    Cheat("c11_torch_fallback.py", "silu_and_mul", 11, static_klass=11),
    Cheat("c11b_call_reference.py", "scale_add", 11, static_klass=16),
    Cheat("c11c_torch_compile.py", "scale_add", 11, static_klass=11),
    Cheat("c11d_aliased_tensor_method.py", "scale_add", 11, static_klass=11),
    Cheat("c11e_compute_behind_getattr.py", "scale_add", 11),
    Cheat("c12_degenerate_task.py", "vanishing_scale", 12),
    Cheat("c13_hardcoded_shapes.py", "scale_add", 13, static_klass=13),
    Cheat("c16_file_cache.py", "scale_add", 16, static_klass=16),
    Cheat("c17_torch_library.py", "scale_add", 17),
    Cheat("c17b_dispatch_unwrapped.py", "scale_add", 17),
    Cheat("c19_store_sqlite.py", "scale_add", 19),
)
# Cheats that change the task on disk: judged on a copy of the task (test_runtime_checks.py).
TASK_TAMPER_CHEATS: tuple[Cheat, ...] = (Cheat("c18_task_rewrite.py", "scale_add", 18),)
# Decided from timings (scoring.py / roofline.py / the post-timing re-check): proven on a GPU only.
TIMING_CHEATS: tuple[Cheat, ...] = (
    Cheat("c06c_graph_capture_detection.py", "scale_add", 6, static_klass=6, cpu_runtime=False),
    Cheat("c14_single_case.py", "scale_add", 14, cpu_runtime=False),
    Cheat("c15_beyond_roofline.py", "scale_add_wall", 15, static_klass=11, cpu_runtime=False),
)
# What the runtime layer reports on a GPU when it differs from the class the cheat implements.
GPU_RUNTIME_CLASSES: dict[str, set[int]] = {
    "c06c_graph_capture_detection": {8, 15},  # the captured graph does nothing: re-check or roofline
    # On the H200 (2026-11-29) the runtime layer already stops it in the correctness stage: its .tolist()
    # stamp dispatches aten._to_copy from host code (class 11); the roofline proof is test_timing_gpu's.
    "c15_beyond_roofline": {8, 11, 15},
}


@dataclass(frozen=True)
class Legit:
    file: Path
    task: str

    @property
    def id(self) -> str:
        return self.file.stem


LEGIT_KERNELS: tuple[Legit, ...] = (
    Legit(LEGIT / "scale_add_triton.py", "scale_add"),
    Legit(LEGIT / "scale_add_two_kernels.py", "scale_add"),
    Legit(LEGIT / "inplace_axpy_triton.py", "inplace_axpy"),
    Legit(LEGIT / "matmul_ieee.py", "matmul_fp32"),
    Legit(LEGIT / "scale_add_prepared.py", "scale_add"),
    Legit(LEGIT / "silu_and_mul_upcast.py", "silu_and_mul"),
    Legit(EXAMPLES / "silu_and_mul" / "candidates" / "silu_and_mul_triton.py", "silu_and_mul"),
    Legit(EXAMPLES / "rmsnorm_residual" / "candidates" / "rmsnorm_residual_triton.py", "rmsnorm_residual"),
    Legit(EXAMPLES / "decode_metadata" / "candidates" / "decode_metadata_triton.py", "decode_metadata"),
)


def hack_numbers(result: EvalResult) -> set[int]:
    return {finding.number for finding in result.hacks}


def describe(result: EvalResult) -> str:
    hacks = "; ".join(f"{h.number}:{h.detector}:{h.evidence[:160]}" for h in result.hacks)
    return (
        f"stage={result.stage.value} passed={result.passed} score={result.score} "
        f"reason={result.reason[:400]!r} hacks=[{hacks}]"
    )
