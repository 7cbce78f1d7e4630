"""The ATen ops a candidate's host code really dispatched during one call (a TorchDispatchMode).

A candidate's host code may allocate, read metadata and prepare layout and dtype (views, contiguous / clone
copies, float<->float casts: guards.host_ops decides from the op what it does); the work must happen in its
Triton kernels. Any other op (aten.mul, aten.topk, a float -> int cast...) issued from the candidate, the
reference or anything they call is PyTorch doing the work: class 11. A cast below float32 in a float32 task is
class 10. Fills are allowed only on tensors the same call just allocated (torch.zeros is an allocation). Ops
issued from inside Triton (its interpreter copies arguments to and from numpy) are Triton's, not the
candidate's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

from evaluators.guards.audit import Attributor
from evaluators.guards.host_ops import HostOp, OpVerdict, below_float32, classify

_MAX_OPS = 20


@dataclass(frozen=True)
class DispatchedOp:
    op: str  # "aten.mul.Tensor"
    where: str  # "candidate.py:31 in silu_and_mul"
    detail: str = ""  # "pointwise", "cast float32 -> int32: a float -> integer cast rounds"

    def describe(self) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.op}{detail} at {self.where}"


class OpRecorder(TorchDispatchMode):
    """Records every disallowed ATen op dispatched from candidate code while the mode is active, and the
    host preparation (copies and casts) it allowed."""

    def __init__(self, attributor: Attributor, float32_task: bool = False) -> None:
        super().__init__()
        self.attributor = attributor
        self.float32_task = float32_task
        self.violations: list[DispatchedOp] = []
        self.downcasts: list[DispatchedOp] = []  # casts below float32 in a float32 task (class 10)
        self.preparation: dict[DispatchedOp, int] = {}
        self.op_counts: dict[str, int] = {}
        self._fresh: set[int] = set()
        # storages of tensors the task keeps on the host, and of what host code computed from them: ops on
        # those alone are host code computing as the reference does, not a fallback from a kernel
        self.host_storages: set[int] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        frame = sys._getframe(1)
        origin = self.attributor.origin(frame)
        verdict = None
        if origin in ("direct", "indirect"):
            self.op_counts[str(func)] = self.op_counts.get(str(func), 0) + 1
            verdict = classify(func, args, kwargs)
            if self._on_host(verdict, args, kwargs):
                result = func(*args, **kwargs)
                if _storage_ptr(result):
                    self.host_storages.add(_storage_ptr(result) or 0)
                return result
            self._judge(str(func), verdict, args, frame)
        result = func(*args, **kwargs)
        if verdict is not None and verdict.kind == HostOp.ALLOCATION:
            self._remember_fresh(result)
        return result

    def _on_host(self, verdict: OpVerdict, args: tuple, kwargs: dict) -> bool:
        """A compute op whose tensors are all CPU tensors the task keeps on the host (or host results)."""
        if verdict.allowed or verdict.kind != HostOp.COMPUTE or not self.host_storages:
            return False
        tensors = _tensors([*args, *kwargs.values()])
        return bool(tensors) and all(
            t.device.type == "cpu" and _storage_ptr(t) in self.host_storages for t in tensors
        )

    def _judge(self, op: str, verdict: OpVerdict, args: tuple, frame: Any) -> None:
        if verdict.kind == HostOp.FILL:
            if not (args and _storage_ptr(args[0]) in self._fresh):
                self._record(
                    self.violations, DispatchedOp(op, self.attributor.where(frame), "fills an input")
                )
            return
        if not verdict.allowed:
            self._record(self.violations, DispatchedOp(op, self.attributor.where(frame), verdict.detail))
            return
        if verdict.kind == HostOp.COPY:
            seen = DispatchedOp(op, self.attributor.where(frame), verdict.detail)
            self.preparation[seen] = self.preparation.get(seen, 0) + 1
            if self.float32_task and below_float32(verdict.lowers_to):
                self._record(self.downcasts, seen)

    def _remember_fresh(self, result: Any) -> None:
        ptr = _storage_ptr(result)
        if ptr is not None:
            self._fresh.add(ptr)

    @staticmethod
    def _record(into: list[DispatchedOp], seen: DispatchedOp) -> None:
        if len(into) >= _MAX_OPS or any(v.op == seen.op and v.detail == seen.detail for v in into):
            return
        into.append(seen)

    def describe(self) -> str:
        shown = ", ".join(v.describe() for v in self.violations[:6])
        more = f" and {len(self.violations) - 6} more" if len(self.violations) > 6 else ""
        return f"host code dispatched PyTorch compute ops: {shown}{more}"

    def describe_downcasts(self) -> str:
        shown = ", ".join(v.describe() for v in self.downcasts[:4])
        return f"host code casts below float32 in a float32 task: {shown}"

    def describe_preparation(self) -> str:
        """'aten._to_copy.default (cast bfloat16 -> float32) at candidate.py:12 in f (x2), ...' or ''."""
        return ", ".join(
            f"{op.describe()}" + (f" (x{n})" if n > 1 else "") for op, n in list(self.preparation.items())[:8]
        )


def _tensors(values: list[Any]) -> list[Any]:
    import torch

    found = []
    for value in values:
        if torch.is_tensor(value):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found += _tensors(list(value))
    return found


def _storage_ptr(tensor: Any) -> int | None:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except Exception:  # not a tensor, or a tensor without storage
        return None
