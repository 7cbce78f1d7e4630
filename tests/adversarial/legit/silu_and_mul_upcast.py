"""Legitimate: the idiom of shipped activation wrappers on a bf16 / fp32 task: split the input, make both
halves float32 and contiguous on the host, compute in float32 in the kernel, cast the result back to the
input dtype. The casts are copies, timed with the kernel; the bf16 rounding of the result is judged by the
tolerance table like any kernel's."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _silu_mul_kernel(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    gate = tl.load(gate_ptr + offs, mask=mask, other=0.0)
    up = tl.load(up_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, gate * tl.sigmoid(gate) * up, mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    gate, up = x.chunk(2, -1)
    gate = gate.float().contiguous()
    up = up.to(torch.float32).contiguous()
    out = torch.empty(gate.shape, dtype=torch.float32, device=x.device)
    n = out.numel()
    _silu_mul_kernel[(triton.cdiv(n, 1024),)](gate, up, out, n, BLOCK=1024)
    return out.to(x.dtype)
