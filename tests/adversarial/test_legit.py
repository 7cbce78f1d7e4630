"""Legitimate kernels — the example tasks' candidates and a few unusual-but-honest ones — pass the full
cascade with no hack finding."""

from __future__ import annotations

import pytest
from suite import LEGIT_KERNELS, Legit, describe, task_dir


@pytest.mark.parametrize("legit", LEGIT_KERNELS, ids=lambda k: k.id)
def test_legit_kernel_passes(judge_pool, legit: Legit) -> None:
    result = judge_pool.evaluate(task_dir(legit.task), legit.file.read_text())
    assert result.passed, describe(result)
    assert result.score == 1.0, describe(result)
    assert not result.hacks, describe(result)
    assert result.correct
    assert any(c.passed for c in result.cases)
