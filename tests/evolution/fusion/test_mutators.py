"""seed:fusion and fusion:variant as the search uses them: the trace in its subprocess (once per task), the
candidate judged by the evaluator on the interpreter, variants that are distinct correct children differing
from their parent in one knob, exhaustion when no knob set is left, and refusals said once."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path

import pytest
from fusion_tasks import write_task
from test_generator import MATMUL_INPUTS, MATMUL_REFERENCE, ROUTER_INPUTS, ROUTER_REFERENCE

from evaluators.candidate import Candidate
from evaluators.config import EvalConfig
from evaluators.pool import WorkerPool
from evaluators.task import load_task
from evolution.config import DEFAULT_WEIGHTS, SearchConfig
from evolution.dedup import candidate_sha
from evolution.mutators.fusion_seed import FusionSeedMutator
from evolution.mutators.fusion_variant import FusionVariantMutator
from evolution.operators import build_operators
from evolution.types import MutationRequest, Program
from evolution.writers.fusion.knobs import parse
from evolution.writers.fusion.writer import FusionWriter

pytestmark = pytest.mark.slow


def _program(source: str, entry: str, name: str) -> Program:
    return Program(name, source, candidate_sha(source, entry), None, "seed:fusion", 0, -1)


@contextlib.contextmanager
def _pool():
    config = EvalConfig(backend="triton-interpret")
    pool = WorkerPool(config.backend, size=1, device_index=0, config=config, replace_workers=False)
    with pool:
        yield lambda task, source: pool.evaluate(
            task, Candidate(source=source, entry=task.entry), config=config
        )


def test_seed_then_variants_until_exhausted(tmp_path: Path) -> None:
    cases = [{"name": "t4_e20", "tokens": 4, "experts": 20, "k": 4}]
    root = write_task(tmp_path / "router", "route", ROUTER_REFERENCE, ROUTER_INPUTS, cases)
    task = load_task(root)
    writer = FusionWriter()
    seed, variant = FusionSeedMutator(writer), FusionVariantMutator(writer)
    outcome = asyncio.run(seed.mutate(MutationRequest(task, None)))
    assert outcome.child_source, outcome.error
    parent = _program(outcome.child_source, task.entry, "p0")
    children: list[str] = []
    for iteration in range(60):
        result = asyncio.run(variant.mutate(MutationRequest(task, parent, iteration=iteration)))
        if result.child_source is None:
            assert result.exhausted, result.error
            assert "already proposed" in result.error
            break
        children.append(result.child_source)
    else:
        pytest.fail("fusion:variant never reported exhaustion")
    shas = {candidate_sha(c, task.entry) for c in children}
    assert len(shas) == len(children) >= 6 and parent.sha not in shas  # knobs without effect are skipped
    knobs = parse(parent.source)
    assert knobs is not None
    for child in children:
        moved = parse(child)
        assert moved is not None and knobs.changed(moved).count("->") == 1
    # Asked again, the exhausted parent stays exhausted (nothing is proposed twice).
    again = asyncio.run(variant.mutate(MutationRequest(task, parent)))
    assert again.child_source is None and again.exhausted
    with _pool() as judge:
        for source in [parent.source, *children[:3]]:
            result = judge(task, source)
            assert result.correct, result.reason


def test_refusal_is_one_sentence_naming_the_op_and_said_once(tmp_path: Path) -> None:
    root = write_task(
        tmp_path / "mm", "project", MATMUL_REFERENCE, MATMUL_INPUTS, [{"name": "t4", "tokens": 4}]
    )
    task = load_task(root)
    writer = FusionWriter()
    seed = FusionSeedMutator(writer)
    first = asyncio.run(seed.mutate(MutationRequest(task, None)))
    assert first.child_source is None and "aten.mm" in first.error and "\n" not in first.error
    assert first.error.count("aten.mm") == 1


def test_variant_refuses_a_parent_it_did_not_write(tmp_path: Path) -> None:
    cases = [{"name": "t4_e20", "tokens": 4, "experts": 20, "k": 4}]
    task = load_task(write_task(tmp_path / "router", "route", ROUTER_REFERENCE, ROUTER_INPUTS, cases))
    foreign = _program("def route(logits, *, top_k=4):\n    return logits\n", task.entry, "x")
    outcome = asyncio.run(FusionVariantMutator(FusionWriter()).mutate(MutationRequest(task, foreign)))
    assert outcome.child_source is None and outcome.exhausted and "fusion-knobs" in outcome.error


def test_registered_by_default_without_an_llm() -> None:
    operators = build_operators(SearchConfig(), "cpu")
    assert {"seed:fusion", "fusion:variant"} <= set(operators.names)
    weights = dict(zip((m.name for m in operators.evolvers), operators.weights, strict=True))
    assert weights["fusion:variant"] == DEFAULT_WEIGHTS["fusion"]
    assert "seed:fusion" not in weights  # seeds never evolve a parent
    assert weights["fusion:inductor"] == DEFAULT_WEIGHTS["fusion"]
    # The engine's line length reaches the writer every fusion operator shares.
    config = SearchConfig(mutation=dataclasses.replace(SearchConfig().mutation, line_length=88))
    writers = {m.writer.line_length for m in build_operators(config, "cpu").evolvers if hasattr(m, "writer")}
    assert writers == {88}
