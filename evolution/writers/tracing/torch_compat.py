"""What the tracers change in torch while they trace, for torch releases that refuse a reference later ones
trace: each change is undone on exit and leaves a torch that already behaves alone.

`copy_` between slices bounded by a host-read value: torch before 2.13 checks a copy's shapes with `!=`
in its meta kernel, which must decide `Eq(u2, u1)` for two unbacked widths (`page_table[:bs,
:max_seq_pages].copy_(req_to_token[...][:, :max_seq_pages] // page_size)`: each slice's width is its own
symbol) and stops Dynamo with a data-dependent guard. torch 2.13's meta checks the same broadcast with
`torch._refs.expand`, which defers what it cannot decide to a run-time assertion; the tracers use that
check on earlier releases (the H200 image has torch 2.11).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

_FIXED_IN = (2, 13)


def _release(version: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else _FIXED_IN


def _deferred_copy_meta(self: Any, src: Any, non_blocking: bool = False) -> Any:
    import torch

    if isinstance(src, torch.Tensor):
        torch._refs.expand(src.to(self, non_blocking), self.size())
    return self


@contextlib.contextmanager
def unbacked_copies() -> Iterator[None]:
    """Within the block, `copy_` between tensors of unbacked widths traces on torch < 2.13 as on 2.13."""
    import torch
    from torch._C import DispatchKey

    op = torch.ops.aten.copy_.default
    kernels = op.py_kernels
    if _release(torch.__version__) >= _FIXED_IN or DispatchKey.Meta not in kernels:
        yield
        return
    original = kernels[DispatchKey.Meta]
    kernels[DispatchKey.Meta] = _deferred_copy_meta
    op._dispatch_cache.clear()
    try:
        yield
    finally:
        kernels[DispatchKey.Meta] = original
        op._dispatch_cache.clear()
