"""Shared by the fusion generator's tests: a judge that runs a candidate through the evaluator under Triton's
interpreter, in one pool per test module."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from evaluators.candidate import Candidate
from evaluators.config import EvalConfig
from evaluators.pool import WorkerPool
from evaluators.result import EvalResult
from evaluators.task import Task


@pytest.fixture(scope="module")
def judge() -> Iterator[Callable[[Task, str], EvalResult]]:
    config = EvalConfig(backend="triton-interpret")
    with WorkerPool(config.backend, size=1, device_index=0, config=config, replace_workers=False) as pool:
        yield lambda task, source: pool.evaluate(
            task, Candidate(source=source, entry=task.entry), config=config
        )
