"""Compares one output (or mutated argument) with the reference and says which element differed, where and
by how much. The evaluator's correctness stage, the post-timing re-check and the kernel tests all call this.

NaN and Inf never pass: a non-finite value is accepted only where the reference has the very same one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from evaluators.result import Mismatch
from evaluators.task import Tolerance


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


def _first_index(mask: torch.Tensor) -> tuple[int, ...]:
    flat = int(torch.nonzero(mask.reshape(-1))[0].item())
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), mask.shape)) if mask.dim() else ()


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

    exp = expected.detach().to(torch.float64)
    act = actual.detach().to(torch.float64)
    exp_finite = torch.isfinite(exp)
    act_finite = torch.isfinite(act)
    # Non-finite values pass only where the reference holds the identical non-finite value.
    same_nonfinite = (~exp_finite) & (~act_finite) & ((exp == act) | (torch.isnan(exp) & torch.isnan(act)))
    bad_nonfinite = (~act_finite | ~exp_finite) & ~same_nonfinite
    both = exp_finite & act_finite
    diff = torch.where(both, (act - exp).abs(), torch.zeros_like(exp))
    rel = diff / exp.abs().clamp_min(torch.finfo(torch.float64).tiny)
    max_abs = float(diff.max())
    max_rel = float(torch.where(exp.abs() > tol.atol, rel, torch.zeros_like(rel)).max())
    bound = tol.atol + tol.rtol * exp.abs()
    bad = bad_nonfinite | (both & (diff > bound))
    if not bool(bad.any()):
        return Comparison(ok=True, max_abs_error=max_abs, max_rel_error=max_rel)
    idx = _first_index(bad)
    e, a = float(exp[idx]), float(act[idx])
    count = int(bad.sum())
    what = "non-finite value" if bool(bad_nonfinite.any()) else "value outside tolerance"
    detail = (
        f"{count} of {bad.numel()} elements differ ({what}); atol={tol.atol:g} rtol={tol.rtol:g}; "
        f"max abs error {max_abs:.3g}, max rel error {max_rel:.3g}"
    )
    return Comparison(
        ok=False,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        mismatch=Mismatch(output=name, index=idx, expected=e, actual=a, detail=detail),
        reason=f"{name}[{', '.join(map(str, idx))}] = {a:.6g}, expected {e:.6g} ({detail})",
    )


def _compare_exact(expected: torch.Tensor, actual: torch.Tensor, name: str, fraction: float) -> Comparison:
    bad = actual != expected.to(actual.dtype)
    count = int(bad.sum())
    max_abs = float((actual.to(torch.float64) - expected.to(torch.float64)).abs().max())
    if count == 0 or count <= fraction * bad.numel():
        return Comparison(ok=True, max_abs_error=max_abs if count else 0.0)
    idx = _first_index(bad)
    e, a = float(expected[idx]), float(actual[idx])
    detail = f"{count} of {bad.numel()} elements differ (exact match required"
    detail += f", {fraction:g} tolerated)" if fraction else ")"
    return Comparison(
        ok=False,
        max_abs_error=max_abs,
        max_rel_error=float("inf"),
        mismatch=Mismatch(output=name, index=idx, expected=e, actual=a, detail=detail),
        reason=f"{name}[{', '.join(map(str, idx))}] = {a:g}, expected {e:g} ({detail})",
    )
