"""Legitimate kernels — the example tasks' candidates and a few unusual-but-honest ones — pass the full
cascade with no hack finding."""

from __future__ import annotations

import pytest
from suite import LEGIT, LEGIT_KERNELS, Legit, describe, task_dir


@pytest.mark.parametrize("legit", LEGIT_KERNELS, ids=lambda k: k.id)
def test_legit_kernel_passes(judge_pool, legit: Legit) -> None:
    result = judge_pool.evaluate(task_dir(legit.task), legit.file.read_text())
    assert result.passed, describe(result)
    assert result.score == 1.0, describe(result)
    assert not result.hacks, describe(result)
    assert result.correct
    assert any(c.passed for c in result.cases)


def test_the_worker_log_names_the_host_preparation_that_ran(judge_pool) -> None:
    """Casts and copies are allowed, timed with the kernel, and said: the op, what it converted, where."""
    source = (LEGIT / "silu_and_mul_upcast.py").read_text()
    result = judge_pool.evaluate(task_dir("silu_and_mul"), source)
    assert result.passed and not result.hacks, describe(result)
    note = next(line for line in result.logs.splitlines() if line.startswith("host preparation"))
    assert "timed with the kernel" in note and "aten._to_copy" in note, note
    assert "bfloat16 -> float32" in note or "aten.clone" in note, note
    assert "candidate.py:" in note, note
