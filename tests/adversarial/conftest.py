"""One warm evaluator pool for the whole adversarial suite: a worker's first warm-up costs ~20 s on a 2-core
machine, each evaluation afterwards ~1-3 s on the suite's tiny tasks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from suite import SUITE_CONFIG

from evaluators.pool import WorkerPool


@pytest.fixture(scope="session")
def judge_pool() -> Iterator[WorkerPool]:
    with WorkerPool("triton-interpret", size=2, config=SUITE_CONFIG) as pool:
        yield pool
