"""Class 5 — lazy tensor subclass (target: scale_add).

Returns a torch.Tensor subclass whose values are computed only when something looks at them (any torch
function on it triggers the real computation). Timing the call measures almost nothing; torch.allclose in a
naive harness triggers the work and passes. Caught at run time: outputs must be plain torch.Tensor objects.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask
    )


class _Deferred(torch.Tensor):
    @staticmethod
    def __new__(cls, x, y, alpha):
        self = torch.Tensor._make_subclass(cls, torch.empty_like(x))
        self._pending = (x, y, alpha)
        return self

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in args:
            if isinstance(a, _Deferred) and getattr(a, "_pending", None) is not None:
                x, y, alpha = a._pending
                a._pending = None
                n = x.numel()
                _scale_add_kernel[(triton.cdiv(n, 1024),)](
                    x, y, a.as_subclass(torch.Tensor), n, alpha, BLOCK=1024
                )
        return super().__torch_function__(func, types, args, kwargs or {})


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return _Deferred(x, y, alpha)
