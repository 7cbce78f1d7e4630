"""One tolerance table keyed by dtype, shared by the kernel tests and the evaluator's correctness stage, so
that "correct" means the same thing in both. Tasks may override an entry in task.toml ([tolerance.<dtype>]).

Errors are measured against a float64 reference where the reference can run in float64, so the bounds
cover the output's own rounding (bf16 keeps 8 mantissa bits, ~0.4 %) plus the few roundings a fused kernel
does in between; fp32 bounds allow a reduction order different from PyTorch's.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.task import Task, Tolerance

DEFAULT_TOLERANCES: Mapping[str, Tolerance] = {
    "float64": Tolerance(atol=1e-9, rtol=1e-9),
    "float32": Tolerance(atol=1e-5, rtol=1e-5),
    "float16": Tolerance(atol=1e-3, rtol=1e-2),
    "bfloat16": Tolerance(atol=1e-2, rtol=2e-2),
    "float8_e4m3fn": Tolerance(atol=6e-2, rtol=1.25e-1),
    "float8_e5m2": Tolerance(atol=1.25e-1, rtol=2.5e-1),
}
EXACT = Tolerance(atol=0.0, rtol=0.0)


def dtype_name(dtype: object) -> str:
    """'torch.bfloat16' -> 'bfloat16'; plain strings pass through."""
    return str(dtype).removeprefix("torch.")


def tolerance_for(dtype: object, task: Task | None = None) -> Tolerance:
    """The task's override for `dtype`, else the table's entry; integers and bools are exact."""
    name = dtype_name(dtype)
    if task is not None and name in task.tolerances:
        return task.tolerances[name]
    if name in DEFAULT_TOLERANCES:
        return DEFAULT_TOLERANCES[name]
    return EXACT
