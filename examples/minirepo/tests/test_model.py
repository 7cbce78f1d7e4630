from __future__ import annotations

import torch

from minisglang.model_executor.model import TinyConfig, TinyModel
from minisglang.model_executor.runner import DecodeRunner

PROMPTS = [[1, 2, 3, 4, 5], [7, 8], [9, 10, 11, 12, 13, 14, 15, 16, 17]]


def tiny_model() -> TinyModel:
    torch.manual_seed(0)
    return TinyModel(TinyConfig()).eval()


def test_generation_does_not_depend_on_the_kv_layout():
    """Different page sizes and page orders scatter the KV cache differently; the tokens must not change."""
    model = tiny_model()
    outputs = [
        DecodeRunner(model, max_bs=4, max_context_len=64, page_size=page, seed=seed).generate(PROMPTS, 6)
        for page, seed in [(1, 0), (4, 1), (16, 2)]
    ]
    assert outputs[0] == outputs[1] == outputs[2]
    assert [len(o) for o in outputs[0]] == [6, 6, 6]


def test_a_request_decodes_the_same_alone_or_in_a_batch():
    model = tiny_model()
    batched = DecodeRunner(model, max_bs=4, max_context_len=64, page_size=4).generate(PROMPTS, 4)
    alone = DecodeRunner(model, max_bs=4, max_context_len=64, page_size=4).generate(PROMPTS[2:], 4)
    assert batched[2] == alone[0]


def test_the_moe_layer_routes_to_several_experts():
    model = tiny_model()
    runner = DecodeRunner(model, max_bs=4, max_context_len=64, page_size=4)
    moe = model.layers[1].mlp
    hidden = torch.randn(8, model.config.hidden_size)
    _, ids = moe.topk(moe.gate(hidden))
    assert ids.unique().numel() > 8
    assert runner.generate([[3, 1, 4]], 2)[0] != []
