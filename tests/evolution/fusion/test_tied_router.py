"""The fusion seed of a softmax router over bf16 logits that tie in almost every row (small integers): the
generated kernel orders tied experts its own way, and under the task's `[[compare.ties]]` (what extraction
writes for a returned top-k) the evaluator on the interpreter finds it correct on every case, hidden seeds
and sizes included."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fusion_tasks import write_task
from test_generator import ROUTER_REFERENCE
from test_mutators import _pool

from evaluators.task import load_task
from evolution.mutators.fusion_seed import FusionSeedMutator
from evolution.types import MutationRequest
from evolution.writers.fusion.writer import FusionWriter

pytestmark = pytest.mark.slow

TIED_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randint(-2, 3, (case["tokens"], case["experts"]), generator=g).to(torch.bfloat16)
    return (logits.to(device),), {"top_k": case["k"]}
"""
TIES = """
[[compare.ties]]
key = "return[1]"
values = "return[0]"
"""


def test_the_fusion_seed_of_a_tied_bf16_router_is_correct_up_to_ties(tmp_path: Path) -> None:
    cases = [
        {"name": "t1", "tokens": 1, "experts": 16, "k": 4},
        {"name": "t6", "tokens": 6, "experts": 16, "k": 4},
    ]
    root = write_task(tmp_path / "router", "route", ROUTER_REFERENCE, TIED_INPUTS, cases, extra=TIES)
    task = load_task(root)
    assert task.compare.ties and task.compare.ties[0].key == "return[1]"
    outcome = asyncio.run(FusionSeedMutator(FusionWriter()).mutate(MutationRequest(task, None)))
    assert outcome.child_source, outcome.error
    with _pool() as judge:
        result = judge(task, outcome.child_source)
    assert result.correct, result.reason
    assert any(c.hidden for c in result.cases)
