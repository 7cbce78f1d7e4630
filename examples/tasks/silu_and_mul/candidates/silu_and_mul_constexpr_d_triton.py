"""SiLU-and-mul, flat grid, with d as a compile-time constant (a third seed beside silu_and_mul_triton.py and
silu_and_mul_flat_triton.py; it came out of the bench/variants sweep on the H200: 1.00x torch.compile on the
large cases, where the runtime-d seeds were at 0.98-1.00x).

The flat seed divides every output index by a runtime d (a ~20-instruction integer division per element);
torch.compile with static shapes divides by a constant (a multiply-high and shift). d never varies at
serving time, so compiling once per d costs nothing. Blocks, buckets and 32-bit offsets as in the seed.

On a GPU, large 16-bit inputs take silu as Inductor writes it, gate / (1 + exp(-gate)) with libdevice's
expf: over 15 fresh processes on the H200 (2026-11-30, recorded in c6e1c54) that read 0.9996-1.0036x
torch.compile on the three large bf16 cases against 0.9973-0.9985x with tl.sigmoid; fp32 read 0.9940x with
it and 0.9964x without. Large fp32 inputs take gate / (1 + tl.exp(-gate)): compile's own kernel made
standalone with tl.exp read 0.9998x on fp32 (bench/probes/silu_inductor_static.py). The small and medium
sizes keep tl.sigmoid (not measured otherwise). The Triton interpreter has no libdevice: on the CPU
tl.sigmoid is used. As in Inductor's kernel, loads and stores drop the mask when the grid divides the output.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

# EVOLVE-BLOCK-START

SMALL_NUMEL = 1 << 16
MEDIUM_NUMEL = 1 << 22
SMALL_BLOCK = 512
SMALL_WARPS = 2
MEDIUM_BLOCK = 1024
MEDIUM_WARPS = 4
LARGE_BLOCK = 2048
LARGE_WARPS = 8


@triton.jit
def _silu_and_mul_flat_kernel(
    x_ptr,
    out_ptr,
    n_out,
    D: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    WIDE_INDEX: tl.constexpr,
    EVEN: tl.constexpr,
    EXP_FORM: tl.constexpr,
):
    pid = tl.program_id(0)
    if WIDE_INDEX:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    gate_offs = offs + (offs // D) * D  # row * 2D + column
    if EVEN:  # the grid divides the output: no bounds check (constexpr, so only one side is compiled)
        gate = tl.load(x_ptr + gate_offs).to(tl.float32)
        up = tl.load(x_ptr + gate_offs + D).to(tl.float32)
    else:
        mask = offs < n_out
        gate = tl.load(x_ptr + gate_offs, mask=mask, other=0.0).to(tl.float32)
        up = tl.load(x_ptr + gate_offs + D, mask=mask, other=0.0).to(tl.float32)
    if EXP_FORM == 1:
        silu = gate / (1.0 + libdevice.exp(-gate))
    elif EXP_FORM == 2:
        silu = gate / (1.0 + tl.exp(-gate))
    else:
        silu = gate * tl.sigmoid(gate)
    result = (silu * up).to(out_ptr.dtype.element_ty)
    if EVEN:
        tl.store(out_ptr + offs, result)
    else:
        tl.store(out_ptr + offs, result, mask=offs < n_out)


def _exp_form(x: torch.Tensor, n_out: int) -> int:
    """0: gate * tl.sigmoid(gate); 1: libdevice's expf (large 16-bit GPU inputs); 2: tl.exp (large fp32)."""
    if not x.is_cuda or n_out <= MEDIUM_NUMEL:
        return 0
    return 2 if x.dtype == torch.float32 else 1


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    n_out = out.numel()
    if n_out == 0:
        return out
    x = x if x.is_contiguous() else x.contiguous()
    if n_out <= SMALL_NUMEL:
        block_size, num_warps = SMALL_BLOCK, SMALL_WARPS
    elif n_out <= MEDIUM_NUMEL:
        block_size, num_warps = MEDIUM_BLOCK, MEDIUM_WARPS
    else:
        block_size, num_warps = LARGE_BLOCK, LARGE_WARPS
    block_size = min(block_size, triton.next_power_of_2(n_out))
    _silu_and_mul_flat_kernel[(triton.cdiv(n_out, block_size),)](
        x,
        out,
        n_out,
        D=d,
        BLOCK_SIZE=block_size,
        WIDE_INDEX=2 * n_out + block_size >= 2**31,
        EVEN=n_out % block_size == 0,
        EXP_FORM=_exp_form(x, n_out),
        num_warps=num_warps,
    )
    return out


# EVOLVE-BLOCK-END
