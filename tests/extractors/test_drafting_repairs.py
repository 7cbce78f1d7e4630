"""Repairs and first drafts for the default-backend ops of LMDeploy that failed to draft: a table gathered
with sampled vocabulary ids, a gather whose index has one dimension more than its input, dimensions named by
unpacking a shape, the packed 4-bit linear weights, and an output shape built from an int argument (no trial
runs: the error texts are PyTorch's own)."""

from __future__ import annotations

from extractors.drafting.gather_param_uses import gather_param_uses
from extractors.drafting.repair import repairs
from extractors.drafting.serving_shapes import load_profile
from extractors.drafting.solver import initial_assignment
from extractors.drafting.trials import TrialOutcome
from extractors.signature import entry_signature

SAMPLE_IDS = """
import torch


def sample(scores, indices):
    sampled = torch.multinomial(scores, num_samples=1, replacement=True)
    return torch.gather(indices, dim=1, index=sampled).view(-1)
"""
VERIFY = """
import torch


def verify(target_logits, draft_token_ids):
    batch_size, num_spec_tokens = draft_token_ids.shape
    probs = target_logits.softmax(dim=-1)
    return probs.gather(-1, draft_token_ids.unsqueeze(-1)).squeeze(-1)
"""
W4A16 = """
import torch


def w4a16(x, qweight, scales, qzeros, out_features: int, w_bit: int, group_size: int):
    shifts = torch.arange(0, 32, w_bit, device=x.device)
    w = torch.bitwise_right_shift(qweight[:, :, None], shifts[None, None, :]).to(torch.int8)
    z = torch.bitwise_right_shift(qzeros[:, :, None], shifts[None, None, :]).to(torch.int8)
    w = w.view(w.shape[0], -1).unflatten(0, (-1, group_size))
    w = ((w - z.view(z.shape[0], -1)[:, None]) * scales[:, None]).flatten(0, 1)
    return torch.matmul(x.half(), w).reshape(x.shape[:-1] + (out_features,))
"""


def _start(source: str, entry: str):  # type: ignore[no-untyped-def]
    facts = gather_param_uses(source, entry)
    return facts, initial_assignment(entry_signature(source, entry), facts, {}, load_profile("lmdeploy"))


def _proposals(source: str, entry: str, error: str) -> list[str]:
    facts, start = _start(source, entry)
    outcome = TrialOutcome("probe", False, error)
    return [what for _, what in repairs(start, outcome, facts, {"name": "probe", **start.sizes})]


def test_a_table_gathered_with_sampled_ids_grows_to_the_vocabulary() -> None:
    _, start = _start(SAMPLE_IDS, "sample")
    width = start.sizes[start.args["indices"].dims[1]]  # drafted [batch, <a size below the vocabulary>]
    error = f"RuntimeError: index 63348 is out of bounds for dimension 1 with size {width}"
    found = _proposals(SAMPLE_IDS, "sample", error)
    # no drafted index reaches 63348: the index is computed, so the table is widened before ids are narrowed
    assert found[0].startswith("indices.shape[1] := vocab"), found


def test_a_gather_input_one_rank_short_gets_the_index_dimension() -> None:
    _, start = _start(VERIFY, "verify")
    # `batch_size, num_spec_tokens = draft_token_ids.shape`: the second dimension is the speculative count
    assert start.args["draft_token_ids"].dims == ["batch", "spec_tokens"]
    assert start.sizes["spec_tokens"] == 3
    error = "RuntimeError: Index tensor must have the same number of dimensions as input tensor"
    found = _proposals(VERIFY, "verify", error)
    assert found[0] == "target_logits: one dimension more (spec_tokens, as draft_token_ids)", found


def test_packed_int4_weights_and_an_output_shape_from_an_int() -> None:
    _, start = _start(W4A16, "w4a16")
    args = start.args
    assert args["qweight"].dims == ["hidden", "intermediate // 8"] and args["qweight"].dtype == "int32"
    assert args["qzeros"].dims == ["hidden // 128", "intermediate // 8"]
    assert args["scales"].dims == ["hidden // 128", "intermediate"]
    assert args["w_bit"].value == 4 and args["group_size"].value == 128
    values = {**start.sizes, **{"tokens": 37}}
    numel = 37 * values["intermediate"]
    out = args["out_features"].value
    error = f"RuntimeError: shape '[37, {out}]' is invalid for input of size {numel}"
    assert "out_features := intermediate (a view needs it)" in _proposals(W4A16, "w4a16", error)
