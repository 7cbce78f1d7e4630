"""RayExecutor on a local Ray instance (CPU): actors each host a pool; a dead actor loses no evaluation."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import search_fakes
from search_fakes import MarkerPool, make_tiny_task, program_source

from evaluators.task import load_task
from evolution.ray_executor import RayExecutor, TaskBundle

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(search_fakes)  # actors cannot import tests/ by name
    yield
    ray.shutdown()


@pytest.fixture
def task(tmp_path):
    return load_task(make_tiny_task(tmp_path / "task"))


def slow(score: float, seconds: float) -> str:
    return program_source(score).replace("def scale", f'SLOW = "{seconds}"\ndef scale')


def test_task_bundle_round_trip(tmp_path, task) -> None:
    (task.root / "candidates").mkdir()
    (task.root / "candidates" / "big.py").write_text("x" * 1000)
    bundle = TaskBundle.of(task)
    assert set(bundle.files) == {"task.toml", "reference.py", "inputs.py"}  # candidates/ stays home
    root = bundle.unpack(tmp_path / "elsewhere")
    assert load_task(root).name == task.name
    assert bundle.unpack(tmp_path / "elsewhere") == root  # unpacked once
    assert TaskBundle.of(task).digest == bundle.digest


@pytest.mark.slow
def test_actors_judge_candidates(local_ray, task) -> None:
    ex = RayExecutor("ray", backend="triton-interpret", actors=2, pool_factory=MarkerPool)

    async def go():
        await ex.start()
        try:
            sources = [slow(1.0 + i / 10, 0.2) for i in range(4)]
            return await asyncio.gather(*(ex.evaluate(task, s) for s in sources))
        finally:
            await ex.close()

    results = asyncio.run(go())
    assert [r.result.score for r in results] == [pytest.approx(1.0 + i / 10) for i in range(4)]
    assert {r.worker for r in results} == {"ray-actor-1", "ray-actor-2"}  # least-loaded spreads them
    assert ray.is_initialized()  # the executor did not shut down an instance it did not start


@pytest.mark.slow
def test_a_killed_actor_loses_no_evaluation(local_ray, task) -> None:
    ex = RayExecutor("ray", backend="triton-interpret", actors=1, pool_factory=MarkerPool)

    async def go():
        await ex.start()
        try:
            job = asyncio.create_task(ex.evaluate(task, slow(3.0, 1.5)))
            deadline = time.monotonic() + 10
            while not any(s.in_flight for s in ex.slots):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            victim = ex.slots[0]
            ray.kill(victim.handle, no_restart=True)  # the actor dies mid-evaluation
            evaluated = await job
            return victim, evaluated
        finally:
            await ex.close()

    victim, evaluated = asyncio.run(go())
    assert evaluated.result.score == 3.0 and evaluated.result.passed
    assert evaluated.attempts == 2 and evaluated.worker != victim.name
    assert not victim.alive


@pytest.mark.slow
def test_actor_hosts_the_real_worker_pool(local_ray) -> None:
    """The same judging path as a local run: an actor's WorkerPool runs the real evaluator (interpreter)."""
    root = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "silu_and_mul"
    task = load_task(root)
    seed = next((root / "candidates").glob("*.py")).read_text()
    ex = RayExecutor("ray", backend="triton-interpret", actors=1, workers_per_actor=1)

    async def go():
        await ex.start()
        try:
            return await ex.evaluate(task, seed)
        finally:
            await ex.close()

    evaluated = asyncio.run(go())
    result = evaluated.result
    assert result.correct and result.passed and result.score == 1.0, result.reason
    assert result.backend == "triton-interpret" and evaluated.worker == "ray-actor-1"
    assert {c.name for c in result.cases} >= {"t1_d2048_bf16", "t16_d1792_fp32"}


@pytest.mark.slow
def test_a_search_runs_on_ray_actors(local_ray, tmp_path) -> None:
    from search_fakes import BumpMutator

    from evolution.config import SearchConfig, StopConfig
    from evolution.controller import Controller
    from evolution.operators import OperatorSet
    from evolution.redact import Redactor
    from evolution.store import RunStore

    task = load_task(make_tiny_task(tmp_path / "task", [program_source(1.0)]))
    config = SearchConfig(stop=StopConfig(iterations=4))
    ex = RayExecutor("ray", backend="triton-interpret", actors=2, pool_factory=MarkerPool)

    async def go():
        await ex.start()
        try:
            with RunStore.create(tmp_path / "run", task, config, Redactor()) as store:
                controller = Controller(
                    task, config, store, ex, OperatorSet.of([BumpMutator(tag_island=True)])
                )
                return await controller.run()
        finally:
            await ex.close()

    summary = asyncio.run(go())
    assert summary.iterations == 4 and summary.best.score > 1.0
    with RunStore.open(tmp_path / "run", readonly=True) as store:
        workers = {e["worker"] for e in store.evaluations()}
    assert workers <= {"ray-actor-1", "ray-actor-2"} and workers
