"""The LLM-free path on real engine code: the seven functions of the acceptance extracted fresh from their
pip releases (cached under $KERNELBOT_CACHE/sources) with shrunk specs, no candidates/, no --seed, no LLM;
seed:fusion writes the first candidate and the evaluator (the interpreter) finds it correct on every case,
hidden dynamic sizes included. On the router, fusion:variant then yields distinct correct children."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from readable import problems

from bench.fusion_targets import TARGETS, Target, extract_target
from evaluators.candidate import Candidate
from evaluators.config import EvalConfig
from evaluators.pool import WorkerPool
from evaluators.task import load_task
from evolution.dedup import candidate_sha
from evolution.mutators.fusion_seed import FusionSeedMutator
from evolution.mutators.fusion_variant import FusionVariantMutator
from evolution.types import MutationRequest, Program
from evolution.writers.fusion.writer import FusionWriter
from extractors.errors import ExtractionError
from extractors.release_sources import fetch_release

SPECS = Path(__file__).parent / "specs"
pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def releases() -> None:
    for release in sorted({t.release for t in TARGETS}):
        try:
            fetch_release(release)
        except ExtractionError as exc:
            pytest.skip(f"cannot obtain {release} (is the package registry reachable?): {exc}")


@pytest.fixture(scope="module")
def judge():
    config = EvalConfig(backend="triton-interpret")
    pool = WorkerPool(config.backend, size=1, device_index=0, config=config, replace_workers=False)
    with contextlib.ExitStack() as stack:
        stack.enter_context(pool)
        yield lambda task, source: pool.evaluate(
            task, Candidate(source=source, entry=task.entry), config=config
        )


@pytest.fixture(scope="module")
def writer() -> FusionWriter:
    return FusionWriter()


@pytest.fixture(scope="module")
def tasks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fresh")


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_fusion_seed_is_correct_on_a_fresh_task(
    releases: None, judge, writer: FusionWriter, tasks_dir: Path, target: Target
) -> None:
    task_dir = extract_target(target, tasks_dir, SPECS)
    assert not (task_dir / "candidates").exists()
    task = load_task(task_dir)
    outcome = asyncio.run(FusionSeedMutator(writer).mutate(MutationRequest(task, None)))
    assert outcome.child_source, outcome.error
    assert problems(outcome.child_source) == []  # the rules of a shippable module (readable.py)
    result = judge(task, outcome.child_source)
    assert result.correct, result.reason
    assert any(c.hidden for c in result.cases), "the evaluator drew no hidden dynamic size"


def test_variants_of_the_router_are_distinct_and_correct(
    releases: None, judge, writer: FusionWriter, tasks_dir: Path
) -> None:
    target = next(t for t in TARGETS if t.name == "sglang_biased_grouped_topk")
    task = load_task(extract_target(target, tasks_dir / "variants", SPECS))
    seed = asyncio.run(FusionSeedMutator(writer).mutate(MutationRequest(task, None)))
    assert seed.child_source, seed.error
    parent = Program(
        "p", seed.child_source, candidate_sha(seed.child_source, task.entry), None, "seed:fusion", 0, -1
    )
    variant = FusionVariantMutator(writer)
    children = []
    for iteration in range(4):  # the top-k methods come first: every way of keeping the candidates
        outcome = asyncio.run(variant.mutate(MutationRequest(task, parent, iteration=iteration)))
        assert outcome.child_source, outcome.error
        children.append(outcome.child_source)
    assert len({candidate_sha(c, task.entry) for c in children}) == len(children)
    for child in children[1:3]:  # the read-only-keys and the two-reduction top-k in the real kernel
        result = judge(task, child)
        assert result.correct, result.reason


# Older releases' sampling and rotary code (the specs of tests/extractors/specs/real): a top-p filter written
# in place over sorted scores, and SGLang's rotary embedding reading its cos/sin cache at the positions.
OLDER = [
    (
        "lmdeploy==0.10.2",
        "lmdeploy.pytorch.engine.logits_process:_filter_topp_sorted_",
        "lmdeploy_filter_topp",
    ),
    (
        "sglang==0.5.9",
        "sglang.srt.layers.rotary_embedding:RotaryEmbedding.forward_native",
        "sglang_rotary_forward_native",
    ),
]


@pytest.mark.parametrize(("release", "function", "spec"), OLDER, ids=[o[2] for o in OLDER])
def test_fusion_seed_on_older_sampling_code(
    judge, writer: FusionWriter, tasks_dir: Path, release: str, function: str, spec: str
) -> None:
    from extractors.extract import ExtractOptions, extract

    try:
        repo = fetch_release(release)
    except ExtractionError as exc:
        pytest.skip(f"cannot obtain {release} (is the package registry reachable?): {exc}")
    real_specs = Path(__file__).parents[2] / "extractors" / "specs" / "real"
    out = tasks_dir / "older" / spec
    extract(ExtractOptions(repo, function, out=out, spec=real_specs / f"{spec}.toml", force=True))
    task = load_task(out)
    outcome = asyncio.run(FusionSeedMutator(writer).mutate(MutationRequest(task, None)))
    assert outcome.child_source, outcome.error
    result = judge(task, outcome.child_source)
    assert result.correct, result.reason
