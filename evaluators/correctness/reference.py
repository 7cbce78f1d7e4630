"""Running the reference for the correctness stage, and the input plumbing around it.

The reference always runs on clones (never on the inputs it is given): once at the inputs' own precision —
which fixes the dtypes and shapes a candidate must return and shows which arguments the reference mutates —
and once on float64 upcasts of the floating inputs, which gives the values to compare against. When the
float64 run fails (an op without float64 support, a dtype assertion) the whole evaluation falls back to the
native run, and the result says so (`reference_precision = "native"`).
"""

from __future__ import annotations

import inspect
from contextlib import nullcontext
from typing import Any

import torch

from evaluators.context import JudgeContext
from evaluators.correctness.bits import changed_elements
from evaluators.correctness.compare import ReferenceRun, flatten_outputs, output_structure
from evaluators.correctness.selections import Selection, SelectionRecorder, selection_sources
from evaluators.correctness.ties import resolve_name
from evaluators.task import Case, Task

Inputs = tuple[tuple, dict]
_UPCAST = {torch.float16: torch.float64, torch.bfloat16: torch.float64, torch.float32: torch.float64}


# --- cloning -------------------------------------------------------------------------------------------


def _clone_tensor(t: torch.Tensor) -> torch.Tensor:
    """A copy with the same sizes, strides and storage offset (a view into a larger buffer stays one)."""
    t = t.detach()
    dense = t.is_contiguous() and t.storage_offset() == 0
    if dense and t.untyped_storage().nbytes() == t.numel() * t.element_size():
        return t.clone()
    storage = t.untyped_storage().clone()
    out = torch.empty(0, dtype=t.dtype, device=t.device)
    return out.set_(storage, t.storage_offset(), t.size(), t.stride())


def _map(value: Any, fn: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_map(v, fn) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def clone_inputs(inputs: Inputs) -> Inputs:
    args, kwargs = inputs
    return tuple(_map(a, _clone_tensor) for a in args), {k: _map(v, _clone_tensor) for k, v in kwargs.items()}


def _upcast(t: torch.Tensor) -> torch.Tensor:
    target = _UPCAST.get(t.dtype)
    return t.detach().to(target) if target is not None else _clone_tensor(t)


def upcast_inputs(inputs: Inputs) -> Inputs:
    args, kwargs = inputs
    return tuple(_map(a, _upcast) for a in args), {k: _map(v, _upcast) for k, v in kwargs.items()}


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    return [value]


def refill(buffers: Inputs, values: Inputs) -> Inputs | None:
    """Copy the tensors of `values` into the tensors of `buffers` in place and take `values`' scalars.

    Returns the refilled inputs (the same tensor objects as `buffers`), or None when the structure or a
    tensor's shape/dtype differs.
    """
    if len(buffers[0]) != len(values[0]) or list(buffers[1]) != list(values[1]):
        return None
    pairs: list[tuple[torch.Tensor, torch.Tensor]] = []

    def merge(dst: Any, src: Any) -> Any:
        if isinstance(dst, torch.Tensor) or isinstance(src, torch.Tensor):
            if not (isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor)):
                raise ValueError("tensor vs scalar")
            if dst.shape != src.shape or dst.dtype != src.dtype:
                raise ValueError("shape")
            pairs.append((dst, src))
            return dst
        if isinstance(dst, (list, tuple)) and isinstance(src, (list, tuple)) and len(dst) == len(src):
            merged = [merge(d, s) for d, s in zip(dst, src, strict=True)]
            return type(dst)(*merged) if hasattr(dst, "_fields") else type(dst)(merged)
        return src

    try:
        args = tuple(merge(d, s) for d, s in zip(buffers[0], values[0], strict=True))
        kwargs = {k: merge(buffers[1][k], values[1][k]) for k in buffers[1]}
    except ValueError:
        return None
    for dst, src in pairs:
        dst.copy_(src)
    return args, kwargs


def input_numel(inputs: Inputs) -> int:
    return sum(
        v.numel() for v in _leaves(list(inputs[0]) + list(inputs[1].values())) if isinstance(v, torch.Tensor)
    )


def estimate_numel(task: Task, case: Case, seed: int, device: str) -> int:
    """Input elements of a case, built as fake tensors (no memory, no time) when make_inputs allows it."""
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=True):
            return input_numel(task.make_inputs(case, seed, device))
    except Exception:  # data-dependent make_inputs (.item(), .tolist()): build the real inputs
        return input_numel(task.make_inputs(case, seed, device))


def output_nbytes(ref: ReferenceRun) -> int:
    values = [*ref.native_outputs.values(), *ref.native_mutated.values()]
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor)) or 4096


# --- naming arguments ----------------------------------------------------------------------------------


def _parameter_names(fn: Any, count: int) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return [names[i] if i < len(names) else f"args[{i}]" for i in range(count)]


def named_tensors(fn: Any, inputs: Inputs) -> dict[str, torch.Tensor]:
    """Every tensor argument by the reference's parameter name ("cu_seqlens", "caches[1]", "args[3]")."""
    args, kwargs = inputs
    out: dict[str, torch.Tensor] = {}

    def visit(name: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            out[name] = value
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                visit(f"{name}[{i}]", item)
        elif isinstance(value, dict):
            for key, item in value.items():
                visit(f"{name}[{key!r}]", item)

    for name, value in zip(_parameter_names(fn, len(args)), args, strict=True):
        visit(name, value)
    for key, value in kwargs.items():
        visit(key, value)
    return out


# --- the reference -------------------------------------------------------------------------------------


def _has_floating(inputs: Inputs) -> bool:
    leaves = _leaves(list(inputs[0]) + list(inputs[1].values()))
    return any(isinstance(v, torch.Tensor) and v.dtype in _UPCAST for v in leaves)


def _call(ctx: JudgeContext, inputs: Inputs) -> tuple[Any, list[Selection]]:
    """The reference's return value, and its top-k/sort calls when the task has tie rules to check."""
    args, kwargs = inputs
    recorder = SelectionRecorder() if ctx.task.compare.ties else nullcontext()
    with torch.no_grad(), recorder:
        out = ctx.reference(*args, **kwargs)
    ctx.backend.synchronize()
    return out, recorder.selections if isinstance(recorder, SelectionRecorder) else []


def _tie_sources(ctx: JudgeContext, selections: list[Selection], leaves: dict[str, Any]) -> dict:
    keys = [resolve_name(rule.key, leaves) for rule in ctx.task.compare.ties]
    return selection_sources(selections, leaves, keys) if selections else {}


def run_reference(ctx: JudgeContext, inputs: Inputs) -> ReferenceRun:
    """Run the reference on clones of `inputs` (native, then float64 where possible)."""
    native_in = clone_inputs(inputs)
    native_out, native_selections = _call(ctx, native_in)
    before = named_tensors(ctx.reference, inputs)
    native_after = named_tensors(ctx.reference, native_in)
    mutated = [n for n, t in before.items() if changed_elements(t, native_after[n])]
    native_leaves = dict(flatten_outputs(native_out))
    structure = output_structure(native_out)
    dtypes = {n: v.dtype for n, v in native_leaves.items() if isinstance(v, torch.Tensor)}
    dtypes.update({n: before[n].dtype for n in mutated})
    native_mutated = {n: native_after[n] for n in mutated}
    run = ReferenceRun(structure, native_leaves, native_leaves, native_mutated, native_mutated, dtypes)
    run.sources = run.native_sources = _tie_sources(ctx, native_selections, native_leaves)
    if not _has_floating(inputs):
        ctx.notes.setdefault("reference_precision", "native")
        return run
    if ctx.notes.get("reference_precision") == "native":
        return run
    try:
        wide_in = upcast_inputs(inputs)
        wide_out, wide_selections = _call(ctx, wide_in)
        wide_leaves = dict(flatten_outputs(wide_out))
        if output_structure(wide_out) != structure or any(
            isinstance(v, torch.Tensor)
            and (not isinstance(w := wide_leaves[n], torch.Tensor) or tuple(v.shape) != tuple(w.shape))
            for n, v in native_leaves.items()
        ):
            raise ValueError("the float64 run returns other shapes or structure than the native run")
        wide_after = named_tensors(ctx.reference, wide_in)
    except Exception as exc:  # the reference cannot run in float64: judge against its own precision
        ctx.notes["reference_precision"] = "native"
        ctx.notes["reference_precision_reason"] = f"float64 run failed: {type(exc).__name__}: {exc}"
        return run
    ctx.notes["reference_precision"] = "float64"
    run.outputs = wide_leaves
    run.mutated = {n: wide_after[n] for n in mutated}
    run.sources = _tie_sources(ctx, wide_selections, wide_leaves)
    return run


def output_nbytes_guess(inputs: Inputs) -> int:
    """Before the first reference run of a case, assume outputs as large as the largest input."""
    sizes = [t.numel() * t.element_size() for t in _tensors(inputs)]
    return max(sizes, default=4096)


def _tensors(inputs: Inputs) -> list[torch.Tensor]:
    args, kwargs = inputs
    return [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
