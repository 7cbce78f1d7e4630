"""Compares one output (or mutated argument) with the reference and says which element differed, where and
by how much. The evaluator's correctness stage, the post-timing re-check and the kernel tests all call this.

NaN and Inf never pass: a non-finite value is accepted only where the reference has the very same one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch

from evaluators.correctness.bits import changed_elements, count_true, poison_mask
from evaluators.correctness.ties import align_ties, resolve_name
from evaluators.result import Mismatch
from evaluators.task import Task, Tolerance

# Elements compared at a time: the float64 temporaries of one slice stay ~32 MB each. Whole-tensor
# temporaries of a 4096 x 14336 output took ~4 GB and ran 16 workers' 7.9 GB shares out of memory (H200).
COMPARE_CHUNK = 1 << 22


@dataclass(frozen=True)
class Comparison:
    ok: bool
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    mismatch: Mismatch | None = None
    reason: str = ""

    def merged(self, other: Comparison) -> Comparison:
        """Combine two comparisons: worst errors, first failure wins."""
        first_bad = self if not self.ok else other
        return Comparison(
            ok=self.ok and other.ok,
            max_abs_error=max(self.max_abs_error, other.max_abs_error),
            max_rel_error=max(self.max_rel_error, other.max_rel_error),
            mismatch=first_bad.mismatch if not first_bad.ok else None,
            reason=first_bad.reason if not first_bad.ok else "",
        )


def _fail(name: str, reason: str, **fields: object) -> Comparison:
    return Comparison(ok=False, reason=f"{name}: {reason}", **fields)  # type: ignore[arg-type]


def compare_tensors(
    expected: torch.Tensor,
    actual: object,
    tol: Tolerance,
    name: str = "return",
    *,
    expected_dtype: torch.dtype | None = None,
    mismatch_fraction: float = 0.0,
) -> Comparison:
    """Check `actual` against `expected` (possibly a float64 upcast of a lower-precision reference).

    `expected_dtype` is the dtype the reference really produces (defaults to expected.dtype); the candidate
    must match it, as well as the shape and device.
    """
    want_dtype = expected_dtype or expected.dtype
    if not isinstance(actual, torch.Tensor):
        return _fail(name, f"expected a torch.Tensor, got {type(actual).__name__}")
    if type(actual) is not torch.Tensor:
        return _fail(name, f"expected a plain torch.Tensor, got the subclass {type(actual).__name__}")
    if tuple(actual.shape) != tuple(expected.shape):
        return _fail(name, f"shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    if actual.dtype != want_dtype:
        return _fail(name, f"dtype {actual.dtype} != expected {want_dtype}")
    if actual.device.type != expected.device.type:
        return _fail(name, f"on device {actual.device}, expected {expected.device.type}")
    if actual.numel() == 0:
        return Comparison(ok=True)

    exact = not (want_dtype.is_floating_point or want_dtype.is_complex)
    if exact:
        return _compare_exact(expected, actual, name, mismatch_fraction)

    exp_flat, act_flat = expected.detach().reshape(-1), actual.detach().reshape(-1)
    max_abs = max_rel = 0.0
    count, first, any_nonfinite = 0, -1, False
    for start in range(0, exp_flat.numel(), COMPARE_CHUNK):
        exp = exp_flat[start : start + COMPARE_CHUNK].to(torch.float64)
        act = act_flat[start : start + COMPARE_CHUNK].to(torch.float64)
        exp_finite = torch.isfinite(exp)
        act_finite = torch.isfinite(act)
        # Non-finite values pass only where the reference holds the identical non-finite value.
        same_value = (exp == act) | (torch.isnan(exp) & torch.isnan(act))
        same_nonfinite = (~exp_finite) & (~act_finite) & same_value
        bad_nonfinite = (~act_finite | ~exp_finite) & ~same_nonfinite
        both = exp_finite & act_finite
        diff = torch.where(both, (act - exp).abs(), torch.zeros_like(exp))
        rel = diff / exp.abs().clamp_min(torch.finfo(torch.float64).tiny)
        max_abs = max(max_abs, float(diff.max()))
        max_rel = max(max_rel, float(torch.where(exp.abs() > tol.atol, rel, torch.zeros_like(rel)).max()))
        bad = bad_nonfinite | (both & (diff > tol.atol + tol.rtol * exp.abs()))
        chunk_bad = int(torch.count_nonzero(bad))
        if chunk_bad:
            count += chunk_bad
            any_nonfinite = any_nonfinite or bool(bad_nonfinite.any())
            if first < 0:
                first = start + int(torch.nonzero(bad)[0].item())
    if not count:
        return Comparison(ok=True, max_abs_error=max_abs, max_rel_error=max_rel)
    idx = _unravel(first, expected.shape)
    e, a = float(exp_flat[first].to(torch.float64)), float(act_flat[first].to(torch.float64))
    what = "non-finite value" if any_nonfinite else "value outside tolerance"
    detail = (
        f"{count} of {expected.numel()} elements differ ({what}); atol={tol.atol:g} rtol={tol.rtol:g}; "
        f"max abs error {max_abs:.3g}, max rel error {max_rel:.3g}"
    )
    return Comparison(
        ok=False,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        mismatch=Mismatch(output=name, index=idx, expected=e, actual=a, detail=detail),
        reason=f"{name}[{', '.join(map(str, idx))}] = {a:.6g}, expected {e:.6g} ({detail})",
    )


def _unravel(flat: int, shape: torch.Size) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape)) if len(shape) else ()


def _compare_exact(expected: torch.Tensor, actual: torch.Tensor, name: str, fraction: float) -> Comparison:
    exp_flat, act_flat = expected.reshape(-1), actual.reshape(-1)
    count, first, max_abs = 0, -1, 0.0
    for start in range(0, exp_flat.numel(), COMPARE_CHUNK):
        exp, act = exp_flat[start : start + COMPARE_CHUNK], act_flat[start : start + COMPARE_CHUNK]
        bad = act != exp.to(act.dtype)
        chunk_bad = int(torch.count_nonzero(bad))
        if chunk_bad:
            count += chunk_bad
            max_abs = max(max_abs, float((act.to(torch.float64) - exp.to(torch.float64)).abs().max()))
            if first < 0:
                first = start + int(torch.nonzero(bad)[0].item())
    if count == 0 or count <= fraction * expected.numel():
        return Comparison(ok=True, max_abs_error=max_abs)
    idx = _unravel(first, expected.shape)
    e, a = float(exp_flat[first]), float(act_flat[first])
    detail = f"{count} of {expected.numel()} elements differ (exact match required"
    detail += f", {fraction:g} tolerated)" if fraction else ")"
    return Comparison(
        ok=False,
        max_abs_error=max_abs,
        max_rel_error=float("inf"),
        mismatch=Mismatch(output=name, index=idx, expected=e, actual=a, detail=detail),
        reason=f"{name}[{', '.join(map(str, idx))}] = {a:g}, expected {e:g} ({detail})",
    )


# --- structured outputs, unordered rows, poison and mutation helpers (used by the correctness stage) ------


def flatten_outputs(value: object, name: str = "return") -> list[tuple[str, object]]:
    """Name every leaf of a (nested) return value: "return", "return[1]", "return['k']"."""
    if isinstance(value, (tuple, list)) and not isinstance(value, torch.Size):
        out: list[tuple[str, object]] = []
        for i, item in enumerate(value):
            out.extend(flatten_outputs(item, f"{name}[{i}]"))
        return out
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            out.extend(flatten_outputs(item, f"{name}[{key!r}]"))
        return out
    return [(name, value)]


def output_structure(value: object) -> object:
    """A hashable description of a return value's nesting (tuple arity, dict keys), tensors as "T"."""
    if isinstance(value, (tuple, list)) and not isinstance(value, torch.Size):
        return (type(value).__name__, tuple(output_structure(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, output_structure(v)) for k, v in value.items()))
    return "T" if isinstance(value, torch.Tensor) else type(value).__name__


def canonicalize_rows(outputs: dict[str, object], key: str, values: tuple[str, ...]) -> dict[str, object]:
    """Sort each row (last dim) of the integer output `key` and permute the `values` outputs alike.

    Lets top-k style results whose row order is unspecified be compared element by element.
    """
    ids = outputs.get(key)
    if not isinstance(ids, torch.Tensor) or ids.dim() == 0:
        return outputs
    order = torch.argsort(ids.to(torch.int64), dim=-1, stable=True)
    result = dict(outputs)
    result[key] = torch.take_along_dim(ids, order, dim=-1)
    for name in values:
        val = outputs.get(name)
        if isinstance(val, torch.Tensor) and val.shape == ids.shape:
            result[name] = torch.take_along_dim(val, order, dim=-1)
    return result


# --- one whole call: every output and every argument ---------------------------------------------------


@dataclass
class ReferenceRun:
    """What the reference produced for one input set. `outputs`/`mutated` hold the float64 run's values where
    the reference could run in float64, `native_*` the run at the inputs' own precision; `dtypes` are the
    native dtypes a candidate must produce. `sources`/`native_sources` map a `[[compare.ties]]` key to the
    scores the reference's own top-k/sort ran over in that run, where it was observed."""

    structure: object
    outputs: dict[str, object]
    native_outputs: dict[str, object]
    mutated: dict[str, torch.Tensor]
    native_mutated: dict[str, torch.Tensor]
    dtypes: dict[str, torch.dtype]
    sources: dict[str, torch.Tensor] = field(default_factory=dict)
    native_sources: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass
class CallComparison:
    comparison: Comparison
    findings: list[tuple[str, str]]  # (HACK_CLASSES key, evidence)


def _tensor_like(value: object) -> bool:
    return isinstance(value, torch.Tensor) or hasattr(type(value), "__torch_function__")


def _compare_leaf(
    name: str,
    expected: object,
    native: object,
    actual: object,
    dtype: torch.dtype | None,
    tolerances: Callable[[torch.dtype], Tolerance],
    fraction: float,
    actual_for_native: object = None,
) -> Comparison:
    """`actual_for_native`: the candidate's output as aligned to the native run (tied ids), if it differs."""
    if isinstance(expected, torch.Tensor):
        tol = tolerances(dtype or expected.dtype)
        first = compare_tensors(expected, actual, tol, name, expected_dtype=dtype, mismatch_fraction=fraction)
        if first.ok or not isinstance(native, torch.Tensor) or native is expected:
            return first
        # Matching PyTorch's own native-precision result is correct too (a float64 reference is stricter).
        other = actual if actual_for_native is None else actual_for_native
        second = compare_tensors(native, other, tol, name, expected_dtype=dtype, mismatch_fraction=fraction)
        return second if second.ok else first
    if isinstance(actual, torch.Tensor):
        return _fail(name, f"expected {type(expected).__name__} {expected!r}, got a tensor")
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        close = abs(actual - expected) <= 1e-6 + 1e-5 * abs(expected) or actual == expected
        return Comparison(ok=True) if close else _fail(name, f"{actual!r} != expected {expected!r}")
    same = type(expected) is type(actual) and expected == actual
    return Comparison(ok=True) if same else _fail(name, f"{actual!r} != expected {expected!r}")


def _apply_unordered(values: dict[str, object], task: Task) -> dict[str, object]:
    for group in task.compare.unordered:
        key, names = _resolve(group.key, values), tuple(_resolve(v, values) for v in group.values)
        values = canonicalize_rows(values, key, names)
    return values


_resolve = resolve_name


def _excuse_key_rows(expected: dict[str, object], actual: dict[str, object], task: Task) -> None:
    """Where an unordered key row differs (a tolerated near-tie), its value rows cannot be compared: copy the
    expected values there so only rows with agreeing keys are judged."""
    for group in task.compare.unordered:
        key = _resolve(group.key, expected)
        e_ids, a_ids = expected.get(key), actual.get(key)
        if (
            not (isinstance(e_ids, torch.Tensor) and isinstance(a_ids, torch.Tensor))
            or e_ids.shape != a_ids.shape
        ):
            continue
        rows = (
            (e_ids.to(a_ids.device) != a_ids).reshape(-1, e_ids.shape[-1]).any(dim=-1)
            if e_ids.dim()
            else None
        )
        if rows is None or not bool(rows.any()):
            continue
        for name in (_resolve(v, expected) for v in group.values):
            e_val, a_val = expected.get(name), actual.get(name)
            if (
                isinstance(e_val, torch.Tensor)
                and isinstance(a_val, torch.Tensor)
                and a_val.shape == e_ids.shape
            ):
                patched = a_val.detach().clone().reshape(-1, a_val.shape[-1])
                patched[rows] = e_val.reshape(-1, e_val.shape[-1])[rows].to(a_val.dtype)
                actual[name] = patched.reshape(a_val.shape)


def _with_note(verdict: Comparison, note: str) -> Comparison:
    mismatch = verdict.mismatch
    if mismatch is not None:
        mismatch = replace(mismatch, detail=f"{mismatch.detail}; {note}")
    return replace(verdict, mismatch=mismatch, reason=f"{verdict.reason}; {note}")


def compare_call(
    ref: ReferenceRun,
    actual_return: object,
    before: dict[str, torch.Tensor],
    after: dict[str, torch.Tensor],
    task: Task,
    tolerances: Callable[[torch.dtype], Tolerance],
) -> CallComparison:
    """Judge one candidate call: its return value, every argument the reference mutates, and that no other
    argument changed. `before`/`after` map argument names to tensors before the call and after it."""
    findings: list[tuple[str, str]] = []
    actual_leaves = dict(flatten_outputs(actual_return))
    for name, value in actual_leaves.items():
        if _tensor_like(value) and type(value) is not torch.Tensor:
            findings.append(
                (
                    "lazy_output",
                    f"{name} is a {type(value).__module__}.{type(value).__qualname__}, "
                    "not a plain torch.Tensor (work deferred past the call)",
                )
            )
    if output_structure(actual_return) != ref.structure:
        shown = output_structure(actual_return)
        return CallComparison(_fail("return", f"returned {shown}, expected {ref.structure}"), findings)

    for name, tensor in before.items():
        if name in ref.mutated:
            continue
        count = changed_elements(tensor, after[name])
        if count:
            findings.append(
                (
                    "input_mutation",
                    f"argument {name!r} changed in {count} of {tensor.numel()} "
                    "elements; the reference leaves it unchanged",
                )
            )
    expected_raw = {**ref.outputs, **ref.mutated}
    native_raw = {**ref.native_outputs, **ref.native_mutated}
    actual_raw = {**actual_leaves, **{n: after[n] for n in ref.mutated}}
    # Tied top-k ids first (they compare the reference's own row order), then unordered rows are sorted.
    tied = align_ties(expected_raw, actual_raw, ref.sources, task)
    tied_native = (
        align_ties(native_raw, actual_raw, ref.native_sources, task)
        if ref.native_outputs is not ref.outputs
        else tied
    )
    expected = _apply_unordered(expected_raw, task)
    native = _apply_unordered(native_raw, task)
    actual = _apply_unordered(tied.outputs, task)
    actual_native = _apply_unordered(tied_native.outputs, task) if tied_native is not tied else actual
    _excuse_key_rows(expected, actual, task)
    if actual_native is not actual:
        _excuse_key_rows(native, actual_native, task)
    result = Comparison(ok=True)
    for name, exp in expected.items():
        act = actual.get(name)
        verdict = _compare_leaf(
            name,
            exp,
            native.get(name),
            act,
            ref.dtypes.get(name),
            tolerances,
            task.compare.mismatch_fraction,
            actual_native.get(name),
        )
        if not verdict.ok and name in tied.notes:
            verdict = _with_note(verdict, tied.notes[name])
        if not verdict.ok and type(act) is torch.Tensor and isinstance(exp, torch.Tensor):
            poisoned = count_true(poison_mask(act))
            if poisoned and poisoned * 2 >= act.numel():
                findings.append(
                    (
                        "allocator_reuse",
                        f"{name}: {poisoned} of {act.numel()} elements still hold "
                        "the allocator's poison bytes (0xFF): memory never written",
                    )
                )
        result = result.merged(verdict)
    if findings and result.ok and any(k == "input_mutation" for k, _ in findings):
        result = Comparison(
            ok=False,
            max_abs_error=result.max_abs_error,
            max_rel_error=result.max_rel_error,
            reason=next(e for k, e in findings if k == "input_mutation"),
        )
    return CallComparison(result, findings)
