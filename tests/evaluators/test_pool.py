"""WorkerPool: warm single-use workers, the public API's promises, and nothing left behind."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pool_tasks import GOOD, WRONG, at_import, shared_pool, write_task

from evaluators.backends import get_backend
from evaluators.candidate import Candidate
from evaluators.config import EvalConfig
from evaluators.errors import BackendUnavailable, TaskError
from evaluators.launcher import POOL_DIR_PREFIX, sweep_stale_pool_dirs
from evaluators.pool import WorkerPool
from evaluators.process import CACHE_DIR, COMPILE_CACHE_DIR, pool_worker_env, worker_box, worker_env
from evaluators.result import Stage
from evaluators.task import load_task


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task(tmp_path_factory.mktemp("pool"))


@pytest.fixture(scope="module")
def pool() -> WorkerPool:
    return shared_pool()


def processes_inside(root: Path) -> list[int]:
    """Live processes whose working directory lies under `root` (the pool's zygote and workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cwd.startswith(str(root)) and state != "Z":
            found.append(int(entry.name))
    return found


def test_a_correct_candidate_passes_and_a_wrong_one_is_rejected(pool: WorkerPool, task: Path) -> None:
    good = pool.evaluate(task, GOOD)
    assert good.passed and good.correct and good.score == 1.0 and good.speedup is None
    assert good.stage is Stage.CORRECTNESS and good.backend == "triton-interpret"
    assert good.hardware.backend == "triton-interpret" and good.hardware.torch
    assert {c.name for c in good.cases} >= {"n257", "n1000"} and all(c.passed for c in good.cases)
    assert good.candidate_sha == Candidate(GOOD, "scale_shift").sha
    wrong = pool.evaluate(load_task(task), Candidate(WRONG, "scale_shift"))
    assert not wrong.passed and wrong.score == 0.0 and wrong.stage is Stage.CORRECTNESS
    assert any(not c.passed and c.mismatch is not None for c in wrong.cases)


def test_what_the_candidate_prints_comes_back_in_the_logs(pool: WorkerPool, task: Path) -> None:
    result = pool.evaluate(task, at_import("print('hello from the candidate')"))
    assert "hello from the candidate" in result.logs


def test_a_bad_task_raises_and_the_pool_carries_on(pool: WorkerPool, task: Path, tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="does not exist"):
        pool.evaluate(tmp_path / "nope", GOOD)
    broken = write_task(tmp_path, "broken")
    (broken / "reference.py").write_text("import torch\nraise RuntimeError('reference is broken')\n")
    with pytest.raises(TaskError, match="reference is broken"):  # found inside the worker, raised here
        pool.evaluate(broken, GOOD)
    assert pool.evaluate(task, GOOD).passed


def test_unusable_backends_are_refused_up_front() -> None:
    with pytest.raises(BackendUnavailable, match="unknown backend"):
        WorkerPool("no-such-backend")
    if not __import__("torch").cuda.is_available():
        with pytest.raises(BackendUnavailable, match="no CUDA GPU"):
            WorkerPool("triton-cuda")


def test_hidden_seeds_are_drawn_per_evaluation_and_never_returned(
    pool: WorkerPool, task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evaluators.pool as pool_module

    drawn: list[int] = []
    real = pool_module.secrets.randbits

    def recording(bits: int) -> int:
        drawn.append(real(bits) | (1 << 30))  # large enough not to appear in the JSON by chance
        return drawn[-1]

    monkeypatch.setattr(pool_module.secrets, "randbits", recording)
    config = EvalConfig(seeds_per_case=2)
    first = pool.evaluate(task, GOOD, config=config)
    second = pool.evaluate(task, GOOD, config=config)
    assert first.passed and second.passed
    assert len(drawn) == 4 and len(set(drawn)) == 4
    for seed in drawn:
        assert str(seed) not in first.to_json() + second.to_json()
    assert "seed" not in load_task(task).root.joinpath("task.toml").read_text()


def test_worker_environment_holds_no_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-leak")
    monkeypatch.setenv("KERNELBOT_LLM_API_KEY", "sk-do-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-do-not-leak")
    env = worker_env(get_backend("triton-interpret"), tmp_path)
    assert "do-not-leak" not in repr(env)
    assert env["TRITON_INTERPRET"] == "1" and env["TRITON_CACHE_DIR"] == str(tmp_path)
    assert "PATH" in env


def test_workers_of_a_pool_share_its_compiler_caches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A confirmation's fresh processes compile the compile column's reference once per pool, not once each.
    # torch.compile writes its default into os.environ once it has compiled in this process.
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    backend = get_backend("triton-interpret")
    env = pool_worker_env(backend, tmp_path)
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / CACHE_DIR)
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / COMPILE_CACHE_DIR)
    box = worker_box(backend, tmp_path, tmp_path / "w0")
    assert box.env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / COMPILE_CACHE_DIR)
    assert tmp_path / COMPILE_CACHE_DIR in box.writable and (tmp_path / COMPILE_CACHE_DIR).is_dir()
    assert "TORCHINDUCTOR_CACHE_DIR" not in worker_env(backend, tmp_path)


def test_evaluate_async_overlaps_and_leaves_the_loop_free(pool: WorkerPool, task: Path) -> None:
    async def main() -> tuple[list, float]:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        tick_task = asyncio.create_task(ticker())
        results = await asyncio.gather(*(pool.evaluate_async(task, GOOD) for _ in range(3)))
        stop.set()
        await tick_task
        return results, ticks

    start = time.monotonic()
    results, ticks = asyncio.run(main())
    elapsed = time.monotonic() - start
    assert all(r.passed for r in results)
    assert ticks >= elapsed / 0.01 * 0.3  # the loop kept ticking while workers judged


def test_cancelling_evaluate_async_kills_the_worker(pool: WorkerPool, task: Path) -> None:
    config = EvalConfig(static_checks=False, compile_timeout_s=120)
    killed_before = pool.stats.killed

    async def main() -> None:
        job = asyncio.create_task(
            pool.evaluate_async(task, at_import("import time\ntime.sleep(600)"), config=config)
        )
        await asyncio.sleep(1.5)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(main())
    deadline = time.monotonic() + 10
    while pool.stats.killed == killed_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.stats.killed == killed_before + 1
    assert pool.evaluate(task, GOOD).passed


def test_at_most_size_evaluations_in_flight(pool: WorkerPool, task: Path) -> None:
    sleeper = at_import("import time\ntime.sleep(1.0)")
    config = EvalConfig(static_checks=False, seeds_per_case=1)
    results = []
    start = time.monotonic()
    threads = [
        threading.Thread(target=lambda: results.append(pool.evaluate(task, sleeper, config=config)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    assert len(results) == 4 and all(r.passed for r in results)
    assert elapsed >= 2.0  # four one-second sleeps, two at a time (size=2)


def test_a_pools_whole_life_secrets_hidden_and_nothing_left_after_close(
    task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELBOT_LLM_API_KEY", "sk-do-not-leak")
    pool = WorkerPool("triton-interpret", size=2)
    root = pool._root
    source = at_import("import os\nprint('key:', os.environ.get('KERNELBOT_LLM_API_KEY'))")
    result = pool.evaluate(task, source, config=EvalConfig(static_checks=False))
    assert "do-not-leak" not in result.logs + result.reason
    assert processes_inside(root)  # the zygote and the warm workers
    pool.close()
    deadline = time.monotonic() + 10
    while processes_inside(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_inside(root) == []
    assert not root.exists()
    with pytest.raises(RuntimeError, match="closed"):
        pool.evaluate(task, GOOD)


def test_a_dead_zygote_is_replaced(task: Path) -> None:
    with WorkerPool("triton-interpret", size=1) as pool:
        assert pool.evaluate(task, GOOD).passed
        zygote = pool._launcher._zygote
        assert zygote is not None
        zygote.proc.kill()  # takes its warm fork with it
        assert pool.evaluate(task, GOOD).passed
        assert pool._launcher.mode == "fork" and pool._launcher._zygote is not zygote


@pytest.mark.slow
def test_exec_spawning_works_too(task: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELBOT_WORKER_SPAWN", "exec")
    with WorkerPool("triton-interpret", size=1) as pool:
        result = pool.evaluate(task, GOOD)
        assert pool._launcher.mode == "exec" and pool._launcher._zygote is None
    assert result.passed


def test_pool_directories_of_dead_processes_are_swept(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{POOL_DIR_PREFIX}{dead.pid}-abc"
    live = tmp_path / f"{POOL_DIR_PREFIX}{os.getpid()}-def"
    for path in (stale / "w-1", live / "w-1"):
        path.mkdir(parents=True)
    sweep_stale_pool_dirs(tmp_path)
    assert not stale.exists() and live.exists()


def test_each_worker_gets_an_equal_share_of_device_memory(monkeypatch):
    from types import SimpleNamespace

    import torch

    from evaluators.config import EvalConfig
    from evaluators.pool import DEVICE_MEMORY_IN_USE, config_for_job
    from evaluators.worker import limit_device_memory

    assert config_for_job(EvalConfig(), 12)["device_memory_share"] == pytest.approx(DEVICE_MEMORY_IN_USE / 12)
    assert config_for_job(EvalConfig(), 1)["device_memory_share"] == 0.0  # alone on the device: no cap
    assert config_for_job(EvalConfig(device_memory_share=0.5), 12)["device_memory_share"] == 0.5
    calls = []
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, d: calls.append((f, str(d))))
    limit_device_memory({"device_memory_share": 0.075}, SimpleNamespace(device="cuda:1"))
    limit_device_memory({"device_memory_share": 0.075}, SimpleNamespace(device="cpu"))
    limit_device_memory({"device_memory_share": 0.0}, SimpleNamespace(device="cuda:0"))
    assert calls == [(0.075, "cuda:1")]
