"""[[compare.ties]] through the whole correctness stage: a bf16 softmax router whose logits never tie but lie
one ulp apart (close scores) and, in a second case, tie exactly (small integers). A candidate that breaks ties
its own way passes; candidates that cheat with the freedom ties give (arbitrary ids beside the right weights,
an id twice, the id of a smaller but close score, wrong weights beside tie-valid ids) fail, and so does the
honest one when the task declares no tie rule. Hidden seeds, hidden sizes and the float64 run are the
evaluator's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_correctness import make_ctx

from evaluators.correctness import check_correctness

REFERENCE = """\
import torch


def route(logits, top_k: int):
    weights = torch.softmax(logits, dim=-1, dtype=torch.float32)
    values, ids = torch.topk(weights, top_k, dim=-1)
    return values, ids
"""
INPUTS = """\
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    shape = (case["tokens"], case["experts"])
    if case["levels"]:  # a handful of integer logits: most rows tie, at the top-k boundary too
        logits = torch.randint(-(case["levels"] // 2), case["levels"] // 2 + 1, shape, generator=g)
    else:  # distinct logits, neighbours one bf16 ulp apart (1 + n/128): close scores, no tie at all
        logits = 1 + torch.stack([torch.randperm(shape[1], generator=g) for _ in range(shape[0])]) / 128
    return (logits.to(torch.bfloat16).to(device),), {"top_k": case["k"]}
"""
TOML = """\
name = "router"
entry = "route"
regime = "graph"
dynamic = ["tokens"]
{compare}
[[cases]]
name = "close"
tokens = 8
experts = 16
k = 4
levels = 0

[[cases]]
name = "tied"
tokens = 16
experts = 16
k = 4
levels = 5
"""
TIES = '\n[[compare.ties]]\nkey = "return[1]"\nvalues = "return[0]"\n'

# Every candidate computes the true scores; `ids` is the cheat (or the honest other tie order) applied.
CANDIDATE = """\
import torch


def route(logits, top_k: int):
    weights = torch.softmax(logits, dim=-1, dtype=torch.float32)
    experts = weights.shape[-1]
    values, ids = torch.topk(weights, top_k, dim=-1)
    flipped_values, flipped = torch.topk(weights.flip(-1), top_k, dim=-1)
    flipped = experts - 1 - flipped  # the highest-numbered of tied experts first: another valid tie order
{body}
"""
HONEST = "    return flipped_values, flipped\n"
CHEATS = {
    # The right weights, ids that select something else.
    "arbitrary ids": "    return values, (ids + 1) % experts\n",
    # A tied pair reported as one expert twice: its score fits every slot.
    "an id twice": (
        "    twice = flipped.clone()\n"
        "    tied = flipped_values[:, -1] == flipped_values[:, -2]\n"
        "    twice[tied, -1] = twice[tied, -2]\n"
        "    return flipped_values, twice\n"
    ),
    # The next expert down at the boundary, with the k-th weight reported: close, but no tie.
    "a smaller close score": (
        "    below = torch.topk(weights, top_k + 1, dim=-1).indices[:, -1]\n"
        "    untied = values[:, -1] != weights.gather(-1, below[:, None])[:, 0]\n"
        "    swapped = ids.clone()\n"
        "    swapped[untied, -1] = below[untied]\n"
        "    return values, swapped\n"
    ),
    # ...and with its own weight: the values differ as well.
    "a smaller close score and its weight": (
        "    values, ids = torch.topk(weights, top_k + 1, dim=-1)\n"
        "    keep = [*range(top_k - 1), top_k]\n"
        "    return values[:, keep], ids[:, keep]\n"
    ),
    # Tie-valid ids, weights off by a relative 1e-3 (float32 tolerance is 1e-5).
    "wrong weights": "    return flipped_values * 1.001, flipped\n",
}


def _task(tmp_path: Path, ties: bool) -> Path:
    root = tmp_path / ("tied_task" if ties else "plain_task")
    root.mkdir(parents=True, exist_ok=True)
    (root / "reference.py").write_text(REFERENCE)
    (root / "inputs.py").write_text(INPUTS)
    (root / "task.toml").write_text(TOML.format(compare=TIES if ties else ""))
    return root


def _judge(tmp_path: Path, body: str, ties: bool = True):
    return check_correctness(make_ctx(tmp_path, _task(tmp_path, ties), CANDIDATE.format(body=body)))


def test_another_tie_order_passes_only_under_a_tie_rule(tmp_path: Path) -> None:
    report = _judge(tmp_path, HONEST)
    assert report.passed, report.reason
    assert any(c.hidden for c in report.cases)
    without = _judge(tmp_path, HONEST, ties=False)
    assert not without.passed and "return[1]" in without.reason and "exact match required" in without.reason


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_cheat_on_ties_fails(tmp_path: Path, cheat: str) -> None:
    report = _judge(tmp_path, CHEATS[cheat])
    assert not report.passed, cheat
    if cheat == "an id twice":
        assert "twice" in report.reason
    if cheat.startswith("a smaller close score"):  # caught where no score ties, among near neighbours
        assert report.reason.startswith("case close:"), report.reason
    if cheat == "a smaller close score":
        assert "ids may differ only among exactly equal scores" in report.reason
