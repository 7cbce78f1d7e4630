"""Real code without a spec file: the 13 SGLang and LMDeploy functions of test_real_sources.py, extracted
from the same cached releases with drafted inputs only. Each task's reference must run on CPU on every
drafted case (no NaN) and pass the judge's degenerate check (evaluators.degenerate, which the extraction
applies to every case before it writes a task), and the routers that call `torch.topk(..., sorted=False)`
get their unordered compare rule. Set KERNELBOT_DRAFT_NEWER=1 to also draft the same functions from the
newer releases (SGLang 0.5.23, LMDeploy 0.18.0, where three of them moved).

The 13 extractions are independent and each alternates between this process and its trial worker, so they
run two at a time in worker processes (one core each on a 2-core machine) while the tests read them in
order; each test then checks its task here."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from evaluators.task import load_task
from extractors.errors import ExtractionError
from extractors.extract import ExtractOptions, extract
from extractors.gather_unordered_outputs import UnorderedRule
from extractors.probe import ProbeResult
from extractors.release_sources import fetch_release
from tests.extractors.test_real_sources import LMDEPLOY, SGLANG, TARGETS

NEWER = {SGLANG: "sglang==0.5.23", LMDEPLOY: "lmdeploy==0.18.0"}
# Where the newer releases keep the same function.
MOVED = {
    "sglang.srt.layers.rotary_embedding:_apply_rotary_emb": (
        "sglang.srt.layers.rotary_embedding.utils:apply_rotary_emb"
    ),
    "sglang.srt.layers.rotary_embedding:RotaryEmbedding.forward_native": (
        "sglang.srt.layers.rotary_embedding.base:RotaryEmbedding.forward_native"
    ),
    "sglang.srt.layers.attention.flashattention_backend:normal_decode_set_metadata": (
        "sglang.kernels.ops.attention.metadata:normal_decode_set_metadata"
    ),
}
UNORDERED = {"grouped_topk_gpu", "biased_grouped_topk_impl", "MoEGate.forward"}

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def sources() -> dict[str, Path]:
    found = {}
    for release in (SGLANG, LMDEPLOY):
        try:
            found[release] = fetch_release(release)
        except ExtractionError as exc:
            pytest.skip(f"cannot obtain {release} (is the package registry reachable?): {exc}")
    return found


def _prepare_worker() -> None:
    import tests.conftest  # noqa: F401  # the test session's setup (interpreter, caches) in this process too


@dataclass(frozen=True)
class Drafted:
    """What the checks read of an extraction's summary (the whole summary holds parsed source trees)."""

    inputs_source: str
    draft: dict[str, Any]
    probe: ProbeResult | None
    unordered: list[UnorderedRule]


def _extract(root: Path, out: Path, target: str) -> Drafted:
    summary = extract(ExtractOptions(root, target, out=out))
    return Drafted(summary.inputs_source, summary.draft, summary.probe, summary.unordered)


@pytest.fixture(scope="module")
def drafted(
    request: pytest.FixtureRequest, sources: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, tuple[Future[Drafted], Path]]]:
    """The extraction of every target the selected tests cover, all started at once on two worker
    processes, in the tests' order: target -> (its future, its task directory)."""
    selected = {
        item.callspec.params["target"]
        for item in request.session.items
        if item.module is request.module and "drafted" in getattr(item, "fixturenames", ())
    }
    out = tmp_path_factory.mktemp("drafted")
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this one is forked
    with ProcessPoolExecutor(max_workers=2, mp_context=context, initializer=_prepare_worker) as pool:
        jobs = {}
        for i, (release, target) in enumerate(t[:2] for t in TARGETS):
            if target in selected:
                task = out / f"task{i}"
                jobs[target] = (pool.submit(_extract, sources[release], task, target), task)
        yield jobs
        pool.shutdown(cancel_futures=True)


def _check(summary: Drafted, out: Path, target: str) -> None:
    assert summary.inputs_source == "draft" and summary.draft["attempts"] >= 1
    assert summary.probe is not None and summary.probe.ran, summary.probe
    assert summary.probe.degenerate == ""  # the judge's verdict over every case: not degenerate
    task = load_task(out)
    reference = task.load_reference()
    for case in task.cases:
        args, kwargs = task.make_inputs(case, 1, "cpu")
        with torch.no_grad():
            result = reference(*args, **kwargs)
        leaves = [*_leaves(result), *(v for v in [*args, *kwargs.values()] if isinstance(v, torch.Tensor))]
        assert leaves, case.name
        assert not any(torch.isnan(t).any() for t in leaves if t.is_floating_point()), case.name
    if target.split(":")[1] in UNORDERED:
        assert [r.key for r in summary.unordered] == ["return[1]"]
        assert summary.unordered[0].values == ["return[0]"]


_IDS = [t[1].split(":")[1] for t in TARGETS]


@pytest.mark.parametrize(("release", "target"), [t[:2] for t in TARGETS], ids=_IDS)
def test_drafted_inputs_run_and_are_not_degenerate(
    drafted: dict[str, tuple[Future[Drafted], Path]], release: str, target: str
) -> None:
    future, task = drafted[target]
    _check(future.result(), task, target)


@pytest.mark.skipif(not os.environ.get("KERNELBOT_DRAFT_NEWER"), reason="set KERNELBOT_DRAFT_NEWER=1 to run")
@pytest.mark.parametrize(("release", "target"), [t[:2] for t in TARGETS], ids=_IDS)
def test_drafted_inputs_of_the_newer_releases(tmp_path: Path, release: str, target: str) -> None:
    try:
        root = fetch_release(NEWER[release])
    except ExtractionError as exc:
        pytest.skip(f"cannot obtain {NEWER[release]}: {exc}")
    moved = MOVED.get(target, target)
    _check(_extract(root, tmp_path / "task", moved), tmp_path / "task", moved)


def _leaves(value):  # type: ignore[no-untyped-def]
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _leaves(item)
