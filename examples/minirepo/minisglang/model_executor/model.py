"""A two-layer DeepSeek-shaped decoder: layer 0 has a dense gated MLP, layer 1 a 256-expert MoE."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..attention.flash_backend import FlashDecodeBackend
from ..layers.activation import SiluAndMul
from ..layers.layernorm import RMSNorm
from ..layers.moe.topk import NUM_ROUTED_EXPERTS, TOP_K, TopK
from ..mem_cache.memory_pool import PagedKVPool


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int = 512
    hidden_size: int = 128
    num_heads: int = 4
    head_dim: int = 32
    num_layers: int = 2
    first_moe_layer: int = 1
    intermediate_size: int = 256
    moe_intermediate_size: int = 16
    num_experts: int = NUM_ROUTED_EXPERTS
    top_k: int = TOP_K
    rms_eps: float = 1e-6


class Attention(nn.Module):
    def __init__(self, config: TinyConfig, layer_id: int) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.num_heads, self.head_dim = config.num_heads, config.head_dim
        self.qkv_proj = nn.Linear(config.hidden_size, 3 * config.num_heads * config.head_dim, bias=False)
        self.o_proj = nn.Linear(config.num_heads * config.head_dim, config.hidden_size, bias=False)

    def forward(
        self, hidden: torch.Tensor, out_cache_loc: torch.Tensor, kv: PagedKVPool, backend: FlashDecodeBackend
    ) -> torch.Tensor:
        q, k, v = self.qkv_proj(hidden).view(-1, 3, self.num_heads, self.head_dim).unbind(dim=1)
        kv.k_cache[self.layer_id, out_cache_loc.long()] = k
        kv.v_cache[self.layer_id, out_cache_loc.long()] = v
        out = backend.forward_decode(
            q, kv.k_cache[self.layer_id], kv.v_cache[self.layer_id], self.head_dim**-0.5
        )
        return self.o_proj(out.reshape(hidden.shape[0], -1))


class DenseMLP(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden_size, 2 * intermediate_size, bias=False)
        self.act_fn = SiluAndMul()
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_up_proj(x)))


class MoE(nn.Module):
    def __init__(self, config: TinyConfig) -> None:
        super().__init__()
        hidden, inter = config.hidden_size, config.moe_intermediate_size
        self.gate = nn.Linear(hidden, config.num_experts, bias=False)
        self.topk = TopK(config.num_experts, config.top_k)
        self.w13 = nn.Parameter(torch.randn(config.num_experts, 2 * inter, hidden) * hidden**-0.5)
        self.w2 = nn.Parameter(torch.randn(config.num_experts, hidden, inter) * inter**-0.5)
        self.act_fn = SiluAndMul()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, ids = self.topk(self.gate(x.float()))
        out = torch.zeros_like(x)
        for expert in ids.unique().tolist():
            token, slot = (ids == expert).nonzero(as_tuple=True)
            h = self.act_fn(x[token] @ self.w13[expert].t()) @ self.w2[expert].t()
            out.index_add_(0, token, h * weights[token, slot, None].to(x.dtype))
        return out


class DecoderLayer(nn.Module):
    def __init__(self, config: TinyConfig, layer_id: int) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_eps)
        self.self_attn = Attention(config, layer_id)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_eps)
        is_moe = layer_id >= config.first_moe_layer
        self.mlp = MoE(config) if is_moe else DenseMLP(config.hidden_size, config.intermediate_size)

    def forward(self, hidden, residual, out_cache_loc, kv, backend):
        if residual is None:
            residual, hidden = hidden, self.input_layernorm(hidden)
        else:
            hidden, residual = self.input_layernorm(hidden, residual)
        hidden = self.self_attn(hidden, out_cache_loc, kv, backend)
        hidden, residual = self.post_attention_layernorm(hidden, residual)
        return self.mlp(hidden), residual


class TinyModel(nn.Module):
    def __init__(self, config: TinyConfig) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.num_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        for layer in self.layers:
            if isinstance(layer.mlp, MoE):  # a router with a trained-looking load-balancing bias
                nn.init.normal_(layer.mlp.topk.e_score_correction_bias, std=0.05)

    @torch.no_grad()
    def forward(
        self,
        input_ids: torch.Tensor,
        out_cache_loc: torch.Tensor,
        kv: PagedKVPool,
        backend: FlashDecodeBackend,
    ) -> torch.Tensor:
        hidden, residual = self.embed_tokens(input_ids), None
        for layer in self.layers:
            hidden, residual = layer(hidden, residual, out_cache_loc, kv, backend)
        hidden, _ = self.norm(hidden, residual)
        return self.lm_head(hidden)
