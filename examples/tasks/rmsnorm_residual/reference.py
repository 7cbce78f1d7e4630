"""Reference semantics of the `rmsnorm_residual` task.

Provenance: SGLang, python/sglang/srt/layers/layernorm.py, `RMSNorm.forward_native` called with a residual
(the PyTorch path that the fused CUDA `fused_add_rmsnorm` replaces). Rewritten for kernelbot as a
self-contained function; the module's `weight` and `variance_epsilon` become arguments.
"""

from __future__ import annotations

import torch


def rmsnorm_residual(
    x: torch.Tensor,  # [tokens, hidden] bf16 or fp32: the sub-layer output
    residual: torch.Tensor,  # [tokens, hidden], same dtype: the residual stream
    weight: torch.Tensor,  # [hidden], same dtype
    eps: float = 1e-6,
) -> tuple[torch.Tensor, torch.Tensor]:
    orig_dtype = x.dtype
    hidden = x.to(torch.float32) + residual.to(torch.float32)
    residual_out = hidden.to(orig_dtype)
    variance = hidden.pow(2).mean(dim=-1, keepdim=True)
    normed = hidden * torch.rsqrt(variance + eps)
    out = (normed * weight).to(orig_dtype)
    return out, residual_out
