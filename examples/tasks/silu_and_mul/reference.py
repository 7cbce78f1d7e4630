"""Reference semantics of the `silu_and_mul` task (the SwiGLU activation of gated MLPs).

Provenance: SGLang, python/sglang/srt/layers/activation.py, `SiluAndMul.forward_native` (vLLM's layer of the
same name has the same semantics). Rewritten for kernelbot as a self-contained function.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """x: [..., 2 * d] holding [gate | up]; returns silu(gate) * up, shape [..., d], dtype of x."""
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]
