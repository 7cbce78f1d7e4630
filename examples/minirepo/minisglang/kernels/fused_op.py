"""The operator contract: one op, one reference, interchangeable backends behind `forward()`.

An op subclasses `BaseFusedOp` and implements `forward_native` (pure PyTorch: the correctness reference and
the path taken wherever nothing else applies). A kernel backend is a `forward_<backend>` method
(`forward_triton`); it joins automatic selection only when the op declares it in `capabilities` with the
devices it runs on, and `priority` orders the declared backends. Per call, `backend_eligible` may refuse a
backend for operands its kernel does not cover; the next candidate, then `forward_cuda` on a CUDA tensor
when the op has one, then `forward_native`, runs instead.

Dispatch, first match wins:
1. an explicit `forward(..., backend=KernelBackend.X)` (strict: what that method raises reaches the caller);
2. a forced backend (`set_fused_op_backend`, or MINISGLANG_FORCE_FUSED_OP_BACKEND=<value>), best effort: an
   op without it, or whose backend raises NotImplementedError for the call, dispatches as usual;
3. the declared backends in `priority` order, each on the devices it declares and when `backend_eligible`;
4. `forward_cuda` for a CUDA tensor, when the op defines it;
5. `forward_native`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Set
from typing import ClassVar

import torch
from torch import nn

from .spec import CapabilityRequirement, KernelBackend

BACKEND_METHODS = {KernelBackend.TORCH: "forward_native", KernelBackend.TRITON: "forward_triton"}
DEFAULT_PRIORITY = (KernelBackend.TRITON,)

_forced_backend: KernelBackend | None = None


def set_fused_op_backend(backend: KernelBackend | None) -> None:
    """Force every op onto `backend` (None: automatic selection)."""
    global _forced_backend
    _forced_backend = backend


def get_fused_op_backend() -> KernelBackend | None:
    if _forced_backend is not None:
        return _forced_backend
    value = os.environ.get("MINISGLANG_FORCE_FUSED_OP_BACKEND")
    return KernelBackend(value) if value else None


class BaseFusedOp(nn.Module):
    """One logical op with interchangeable implementations behind `forward()` (see the module docstring)."""

    priority: ClassVar[tuple[KernelBackend, ...]] = DEFAULT_PRIORITY
    capabilities: ClassVar[Mapping[KernelBackend, Set[CapabilityRequirement]]] = {}

    def forward_native(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward_native")

    def forward_triton(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: no triton backend")

    def backend_eligible(self, backend: KernelBackend, *args, **kwargs) -> bool:
        """Whether `backend` may run this call: by default, when the call's first tensor is on a device the
        backend declares. Ops extend it with per-call gates for operands their kernel does not cover."""
        device = _device_of(args, kwargs)
        return device is not None and any(req.value == device for req in self.capabilities.get(backend, ()))

    def _defines(self, method: str) -> bool:
        for klass in type(self).__mro__:
            if klass is BaseFusedOp:
                return False
            if method in klass.__dict__:
                return True
        return False

    def forward(self, *args, backend: KernelBackend | None = None, **kwargs):
        if backend is not None:
            return getattr(self, BACKEND_METHODS[backend])(*args, **kwargs)
        forced = get_fused_op_backend()
        if forced is not None and (forced is KernelBackend.TORCH or self._defines(BACKEND_METHODS[forced])):
            try:
                return getattr(self, BACKEND_METHODS[forced])(*args, **kwargs)
            except NotImplementedError:
                pass
        for candidate in self.priority:
            if (
                candidate in self.capabilities
                and self._defines(BACKEND_METHODS[candidate])
                and self.backend_eligible(candidate, *args, **kwargs)
            ):
                return getattr(self, BACKEND_METHODS[candidate])(*args, **kwargs)
        if self._defines("forward_cuda") and _device_of(args, kwargs) == "cuda":
            return self.forward_cuda(*args, **kwargs)
        return self.forward_native(*args, **kwargs)


def _device_of(args: tuple, kwargs: dict) -> str | None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value.device.type
    return None
