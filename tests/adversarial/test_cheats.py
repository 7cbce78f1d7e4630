"""Every public cheat is rejected by the real evaluator (worker pool, Triton interpreter): score 0, its hack
class in the result, with evidence — once with the full cascade, once with the runtime layer alone."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from suite import (
    CHEATS_BY_CLASS,
    RUNTIME_ONLY,
    TASK_TAMPER_CHEATS,
    TIMING_CHEATS,
    Cheat,
    describe,
    hack_numbers,
    task_dir,
)


@pytest.fixture(autouse=True, scope="module")
def _no_cheat_cache_left_behind():
    yield
    shutil.rmtree(Path(tempfile.gettempdir()) / "kb_cheat_cache", ignore_errors=True)


def _assert_rejected(result, klass: int) -> None:
    assert not result.passed, describe(result)
    assert result.score == 0.0, describe(result)
    assert klass in hack_numbers(result), describe(result)
    assert all(h.evidence.strip() for h in result.hacks), describe(result)


@pytest.mark.parametrize("cheat", CHEATS_BY_CLASS, ids=lambda c: c.id)
def test_cheat_is_rejected(judge_pool, cheat: Cheat) -> None:
    result = judge_pool.evaluate(task_dir(cheat.task), cheat.source)
    _assert_rejected(result, cheat.static_klass or cheat.klass)
    if cheat.static_klass is not None:
        assert any(h.detector == "static" for h in result.hacks), describe(result)


@pytest.mark.parametrize("cheat", [c for c in CHEATS_BY_CLASS if c.cpu_runtime], ids=lambda c: c.id)
def test_runtime_layer_alone_catches_cheat(judge_pool, cheat: Cheat) -> None:
    result = judge_pool.evaluate(task_dir(cheat.task), cheat.source, config=RUNTIME_ONLY)
    _assert_rejected(result, cheat.klass)
    assert all(h.detector == "runtime" for h in result.hacks), describe(result)


@pytest.mark.parametrize("cheat", [c for c in TIMING_CHEATS if c.static_klass], ids=lambda c: c.id)
def test_timing_cheats_with_a_static_signature_are_rejected_on_cpu(judge_pool, cheat: Cheat) -> None:
    result = judge_pool.evaluate(task_dir(cheat.task), cheat.source)
    _assert_rejected(result, cheat.static_klass)


def test_every_class_has_a_cheat() -> None:
    covered = {c.klass for c in (*CHEATS_BY_CLASS, *TIMING_CHEATS, *TASK_TAMPER_CHEATS)}
    assert covered == set(range(1, 20))
    for cheat in (*CHEATS_BY_CLASS, *TIMING_CHEATS, *TASK_TAMPER_CHEATS):
        assert cheat.path.is_file(), cheat.path
        assert task_dir(cheat.task).is_dir(), cheat.task
