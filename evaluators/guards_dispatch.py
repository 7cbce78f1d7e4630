"""The ATen ops a candidate's host code really dispatched during one call (a TorchDispatchMode).

A candidate's host code may allocate, take views and read metadata; the work must happen in its Triton
kernels. Any other op (aten.mul, aten.topk, aten.copy_, aten._to_copy...) issued from the candidate, the
reference or anything they call is PyTorch doing the work: class 11. Fills are allowed only on tensors the
same call just allocated (torch.zeros is an allocation). Ops issued from inside Triton (its interpreter copies
arguments to and from numpy) are Triton's, not the candidate's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

from evaluators.guards_audit import Attributor

ALLOCATION_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "empty_permuted",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "new_zeros",
        "ones",
        "ones_like",
        "new_ones",
        "full",
        "full_like",
        "new_full",
        "scalar_tensor",
        "lift_fresh",
    }
)
METADATA_OPS = frozenset(
    {
        "_local_scalar_dense",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
        "size",
        "stride",
        "is_same_size",
        "_has_compatible_shallow_copy_type",
        "is_contiguous",
        "dim",
        "numel",
    }
)
FRESH_ONLY_OPS = frozenset({"fill_", "zero_", "resize_"})
_MAX_OPS = 20


@dataclass(frozen=True)
class DispatchedOp:
    op: str  # "aten.mul.Tensor"
    where: str  # "candidate.py:31 in silu_and_mul"


class OpRecorder(TorchDispatchMode):
    """Records every disallowed ATen op dispatched from candidate code while the mode is active."""

    def __init__(self, attributor: Attributor) -> None:
        super().__init__()
        self.attributor = attributor
        self.violations: list[DispatchedOp] = []
        self.op_counts: dict[str, int] = {}
        self._fresh: set[int] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        frame = sys._getframe(1)
        origin = self.attributor.origin(frame)
        if origin in ("direct", "indirect"):
            self.op_counts[str(func)] = self.op_counts.get(str(func), 0) + 1
            if not self._allowed(func, name, args):
                self._record(str(func), frame)
        result = func(*args, **kwargs)
        if name in ALLOCATION_OPS:
            self._remember_fresh(result)
        return result

    def _allowed(self, func: Any, name: str, args: tuple) -> bool:
        if getattr(func, "is_view", False) or name in ALLOCATION_OPS or name in METADATA_OPS:
            return True
        if name in FRESH_ONLY_OPS and args:
            return _storage_ptr(args[0]) in self._fresh
        return False

    def _remember_fresh(self, result: Any) -> None:
        ptr = _storage_ptr(result)
        if ptr is not None:
            self._fresh.add(ptr)

    def _record(self, op: str, frame: Any) -> None:
        if len(self.violations) >= _MAX_OPS or any(v.op == op for v in self.violations):
            return
        self.violations.append(DispatchedOp(op, self.attributor.where(frame)))

    def describe(self) -> str:
        shown = ", ".join(f"{v.op} at {v.where}" for v in self.violations[:6])
        more = f" and {len(self.violations) - 6} more" if len(self.violations) > 6 else ""
        return f"host code dispatched PyTorch compute ops: {shown}{more}"


def _storage_ptr(tensor: Any) -> int | None:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except Exception:  # not a tensor, or a tensor without storage
        return None
