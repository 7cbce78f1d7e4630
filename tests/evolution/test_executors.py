"""LocalExecutor dispatch and retry, with pools that follow WorkerPool's API but judge by marker."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest
from search_fakes import fake_result, make_tiny_task, program_source

from evaluators.config import EvalConfig
from evaluators.errors import TaskError
from evaluators.task import load_task
from evolution.config import ExecutorConfig
from evolution.errors import SearchError
from evolution.executors import LocalExecutor, make_executor


class MarkerPool:
    """WorkerPool's surface: (backend, size=, device_index=, config=), evaluate_async, close."""

    instances: ClassVar[list[MarkerPool]] = []

    def __init__(self, backend, *, size, device_index, config):
        self.backend, self.size, self.device_index = backend, size, device_index
        self.calls = 0
        self.broken = False
        self.task_error = False
        self.closed = False
        self.delay = 0.02
        self.configs: list[EvalConfig | None] = []  # per evaluation: the config it was given, if any
        MarkerPool.instances.append(self)

    async def evaluate_async(self, task, candidate, config=None):
        self.calls += 1
        self.configs.append(config)
        await asyncio.sleep(self.delay)
        if self.task_error:
            raise TaskError("inputs.py fails to import")
        if self.broken:
            raise BrokenPipeError("worker pool lost its spawner")
        return fake_result(task.name, task.entry, candidate.source)

    def close(self):
        self.closed = True


@pytest.fixture
def task(tmp_path):
    MarkerPool.instances = []
    return load_task(make_tiny_task(tmp_path / "task"))


def executor(devices=(0, 1), per_device=2) -> LocalExecutor:
    return LocalExecutor("triton-cuda", devices, per_device, max_attempts=3, pool_factory=MarkerPool)


def test_one_pool_per_device_and_least_loaded_dispatch(task) -> None:
    ex = executor()

    async def go():
        await ex.start()
        assert ex.capacity == 4
        results = await asyncio.gather(*(ex.evaluate(task, program_source(1.0 + i / 10)) for i in range(8)))
        await ex.close()
        return results

    results = asyncio.run(go())
    assert [p.device_index for p in MarkerPool.instances] == [0, 1]
    assert all(p.size == 2 and p.closed for p in MarkerPool.instances)
    assert [p.calls for p in MarkerPool.instances] == [4, 4]  # spread evenly
    assert {r.worker for r in results} == {"gpu:0#0", "gpu:1#1"}
    assert [r.result.score for r in results] == [pytest.approx(1.0 + i / 10) for i in range(8)]


def test_an_evaluation_against_a_rival_carries_the_rival_to_the_pool(task) -> None:
    """The search's final comparison: the executor's config, its timing baseline the rival's source; its
    check against torch.compile: the baseline "compile"; a plain evaluation leaves the pool's own config in
    force."""
    timing_of_the_run = EvalConfig(seeds_per_case=5)
    ex = LocalExecutor("triton-cuda", (0,), 1, timing_of_the_run, pool_factory=MarkerPool)
    rival = program_source(2.0)

    async def go():
        await ex.start()
        await ex.evaluate(task, program_source(1.0))
        await ex.evaluate(task, program_source(3.0), against=rival)
        await ex.evaluate(task, program_source(3.0), baseline="compile")
        await ex.close()

    asyncio.run(go())
    plain, against, compiled = MarkerPool.instances[0].configs
    assert plain is None and against is not None and compiled is not None
    assert against.timing.baseline == "rival" and against.timing.rival_source == rival
    assert compiled.timing.baseline == "compile" and compiled.timing.rival_source == ""
    assert against.seeds_per_case == compiled.seeds_per_case == 5  # the run's own config otherwise


def test_a_broken_pool_loses_no_evaluation(task) -> None:
    ex = executor()

    async def go():
        await ex.start()
        MarkerPool.instances[0].broken = True
        results = await asyncio.gather(*(ex.evaluate(task, program_source(2.0 + i)) for i in range(4)))
        await ex.close()
        return results

    results = asyncio.run(go())
    assert all(r.result.passed and r.worker == "gpu:1#1" for r in results)
    assert max(r.attempts for r in results) == 2
    assert ex.slots == [] and not any(p.closed is False for p in MarkerPool.instances)


def test_every_pool_broken_is_a_search_error(task) -> None:
    ex = executor(devices=(0,))

    async def go():
        await ex.start()
        MarkerPool.instances[0].broken = True
        await ex.evaluate(task, program_source(1.0))

    with pytest.raises(SearchError, match=r"failed on 3 workers|no evaluation worker"):
        asyncio.run(go())


def test_task_errors_are_not_retried(task) -> None:
    ex = executor()

    async def go():
        await ex.start()
        for p in MarkerPool.instances:
            p.task_error = True
        await ex.evaluate(task, program_source(1.0))

    with pytest.raises(TaskError):
        asyncio.run(go())
    assert sum(p.calls for p in MarkerPool.instances) == 1


def test_cpu_backend_uses_one_pool() -> None:
    ex = LocalExecutor("triton-interpret", pool_factory=MarkerPool)
    asyncio.run(ex.start())
    assert [s.name for s in ex.slots] == ["cpu"]
    asyncio.run(ex.close())


def test_make_executor_picks_by_workers() -> None:
    assert isinstance(make_executor(ExecutorConfig(), EvalConfig()), LocalExecutor)
    from evolution.ray_executor import RayExecutor

    ray_ex = make_executor(ExecutorConfig(workers="ray://127.0.0.1:1"), EvalConfig())
    assert isinstance(ray_ex, RayExecutor) and ray_ex.address == "ray://127.0.0.1:1"


def test_a_worker_killed_from_outside_is_judged_again_elsewhere(task) -> None:
    """A SIGKILL the pool did not send (operator, dying host, OOM killer) gets one more try on another pool;
    a second such verdict stands, so a candidate that really exhausts memory is still rejected."""
    from evaluators.job import describe_exit
    from evaluators.result import EvalResult, Stage

    killed = EvalResult(task.name, "sha", "fake", "wall", Stage.CORRECTNESS, False, reason=describe_exit(-9))

    class KilledOnce(MarkerPool):
        async def evaluate_async(self, task, candidate):
            self.calls += 1
            if self.device_index == 0:
                return killed
            return fake_result(task.name, task.entry, candidate.source)

    ex = LocalExecutor("triton-cuda", (0, 1), 1, max_attempts=3, pool_factory=KilledOnce)

    async def go():
        await ex.start()
        ex.slots[1].in_flight = 1  # make device 0 the first pick
        first = await ex.evaluate(task, program_source(3.0))
        ex.slots[1].alive = False  # only the killing pool is left: its second verdict stands
        second = await ex.evaluate(task, program_source(4.0))
        await ex.close()
        return first, second

    first, second = asyncio.run(go())
    assert first.worker == "gpu:1#1" and first.attempts == 2 and first.result.score == pytest.approx(3.0)
    assert second.attempts == 2 and not second.result.passed and "SIGKILL" in second.result.reason
