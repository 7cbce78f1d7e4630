"""Probe: torch.compile's own silu_and_mul kernel for the H200 made standalone (Inductor's output code, dumped
on the H200 on 2026-11-30: a static pointwise kernel, XBLOCK 1024, 4 warps, 1 stage). The literal sizes
become a constexpr D, the mask is kept only when the grid does not divide the output, and EXP_KIND picks the
exp so one change at a time can be timed against compile (bench/run.sh vs-compile).

EXP_KIND 0 (Inductor's libdevice expf) runs on GPUs only: the Triton interpreter has no libdevice.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

XBLOCK = 1024
NUM_WARPS = 4
NUM_STAGES = 1
EXP_KIND = 0  # 0 libdevice.exp (Inductor), 1 tl.exp, 2 range-reduced tl.exp2, 3 gate * tl.sigmoid(gate)


@triton.jit
def _exp_reduced(x):
    # exp(x) = 2^j * 2^r with j = round(x log2 e) and |r| <= 1/2: the split libdevice's expf makes, here in
    # plain tl (the interpreter has no libdevice); 2^j is built from its exponent bits.
    t = x * 1.4426950408889634
    j = tl.floor(t + 0.5)
    r = tl.fma(x, 1.4426950408889634, -j) + x * 1.925963033500072e-08
    j = tl.minimum(tl.maximum(j, -126.0), 127.0)
    scale = ((j.to(tl.int32) + 127) << 23).to(tl.float32, bitcast=True)
    return tl.exp2(r) * scale


@triton.jit
def _silu_and_mul_static(
    in_ptr0,
    out_ptr0,
    xnumel,
    D: tl.constexpr,
    XBLOCK: tl.constexpr,
    EVEN: tl.constexpr,
    EXP_KIND: tl.constexpr,
):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    x0 = xindex % D
    x1 = xindex // D
    if EVEN:
        tmp0 = tl.load(in_ptr0 + (x0 + 2 * D * x1), None).to(tl.float32)
        tmp8 = tl.load(in_ptr0 + (D + x0 + 2 * D * x1), None).to(tl.float32)
    else:
        xmask = xindex < xnumel
        tmp0 = tl.load(in_ptr0 + (x0 + 2 * D * x1), xmask).to(tl.float32)
        tmp8 = tl.load(in_ptr0 + (D + x0 + 2 * D * x1), xmask).to(tl.float32)
    if EXP_KIND == 0:
        tmp9 = (tmp0 / (libdevice.exp(-tmp0) + 1.0)) * tmp8
    elif EXP_KIND == 1:
        tmp9 = (tmp0 / (tl.exp(-tmp0) + 1.0)) * tmp8
    elif EXP_KIND == 2:
        tmp9 = (tmp0 / (_exp_reduced(-tmp0) + 1.0)) * tmp8
    else:
        tmp9 = tmp0 * tl.sigmoid(tmp0) * tmp8
    if EVEN:
        tl.store(out_ptr0 + xindex, tmp9, None)
    else:
        tl.store(out_ptr0 + xindex, tmp9, xindex < xnumel)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    n = out.numel()
    if n == 0:
        return out
    x = x if x.is_contiguous() else x.contiguous()
    _silu_and_mul_static[(triton.cdiv(n, XBLOCK),)](
        x,
        out,
        n,
        D=d,
        XBLOCK=XBLOCK,
        EVEN=n % XBLOCK == 0,
        EXP_KIND=EXP_KIND,
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    return out
