from __future__ import annotations

import torch

from minisglang.layers.activation import SiluAndMul
from minisglang.layers.layernorm import DEFAULT_RMS_EPS, RMSNorm


def test_silu_and_mul_matches_the_formula():
    x = torch.randn(3, 2 * 40, dtype=torch.float64)
    gate, up = x[:, :40], x[:, 40:]
    torch.testing.assert_close(SiluAndMul().forward_native(x), gate / (1 + torch.exp(-gate)) * up)
    assert SiluAndMul()(x.to(torch.bfloat16)).dtype == torch.bfloat16


def test_rmsnorm_without_residual():
    norm = RMSNorm(64)
    assert norm.eps == DEFAULT_RMS_EPS
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(0.5, 1.5, 64))
    x = torch.randn(5, 64) * 3
    expected = x / x.pow(2).mean(-1, keepdim=True).add(norm.eps).sqrt() * norm.weight
    torch.testing.assert_close(norm(x), expected)


def test_rmsnorm_with_residual_returns_the_sum_as_new_residual():
    norm = RMSNorm(32, eps=1e-5)
    x, residual = torch.randn(4, 32, dtype=torch.bfloat16), torch.randn(4, 32, dtype=torch.bfloat16)
    out, new_residual = norm(x, residual)
    total = x.float() + residual.float()
    assert torch.equal(new_residual, total.to(torch.bfloat16))
    expected = total * torch.rsqrt(total.pow(2).mean(-1, keepdim=True) + 1e-5)
    torch.testing.assert_close(out, expected.to(torch.bfloat16), atol=1e-2, rtol=2e-2)
