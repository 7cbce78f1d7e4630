"""Drafts read from how each value is used: ranks a gather or an embedding needs, one value per row through a
cast, rows of probabilities for multinomial (the assignment drafted before any trial runs)."""

from __future__ import annotations

from extractors.drafting.gather_param_uses import gather_param_uses
from extractors.drafting.serving_shapes import load_profile
from extractors.drafting.solver import initial_assignment
from extractors.signature import entry_signature

REPETITION = """
import torch


def penalize(scores, input_ids, penalty):
    score = torch.gather(scores, 1, input_ids)
    penalty = penalty.to(score.dtype)
    score = torch.where(score < 0, score * penalty[:, None], score / penalty[:, None])
    scores.scatter_(1, input_ids, score)
    return scores
"""
EMBEDDING = """
import torch.nn.functional as F


def embed(x, weight):
    return F.embedding(x, weight)
"""
SAMPLE = """
import torch


def sample(scores):
    return torch.multinomial(scores, num_samples=1, replacement=True).view(-1)
"""


def _drafted(source: str, entry: str) -> dict[str, str]:
    facts = gather_param_uses(source, entry)
    start = initial_assignment(entry_signature(source, entry), facts, {}, load_profile("sglang"))
    return dict(line.split(": ", 1) for line in start.describe())


def test_a_gather_index_has_its_sources_rank_and_a_cast_keeps_one_value_per_row() -> None:
    drafted = _drafted(REPETITION, "penalize")
    assert drafted["input_ids"].startswith("tensor [batch, ") and "int64" in drafted["input_ids"]
    assert drafted["penalty"].startswith("tensor [batch] ")  # penalty[:, None] after penalty.to(...)


def test_embedding_ids_are_one_per_token_and_the_table_is_2d() -> None:
    drafted = _drafted(EMBEDDING, "embed")
    assert drafted["x"].startswith("tensor [tokens] int64")
    assert drafted["weight"].count(",") == 1  # [rows, hidden]


def test_multinomial_draws_from_rows_of_probabilities() -> None:
    assert "probs" in _drafted(SAMPLE, "sample")["scores"]


LAYER_NORM = """
import torch


def norm(x, weight, bias, *, normalized_shape, eps=1e-6):
    return torch.nn.functional.layer_norm(x, normalized_shape, weight=weight, bias=bias, eps=eps)
"""


def test_a_layer_norms_shape_is_the_tuple_of_the_inputs_trailing_dim() -> None:
    drafted = _drafted(LAYER_NORM, "norm")
    assert drafted["normalized_shape"].startswith("int = (hidden,) ((")
    assert drafted["x"].startswith("tensor [tokens, hidden]")
