"""Where candidates are evaluated: worker pools on local GPUs (LocalExecutor here), or Ray actors each hosting
such a pool (evolution.ray_executor.RayExecutor); `make_executor` picks one from the run's config.

Both share one dispatch path, evolution.dispatch: least-loaded slot first, a candidate whose slot broke is
retried elsewhere, a KernelbotError ends the run. Its names are re-exported here for callers that only need
"an executor".

Mutation never happens here: executors only judge (the controller runs mutation operators in its own loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from evaluators.candidate import Candidate
from evaluators.config import EvalConfig
from evaluators.result import EvalResult, Hardware
from evaluators.task import Task
from evolution.config import ExecutorConfig
from evolution.dispatch import DispatchingExecutor, Evaluated, Executor, PoolFactory, Slot, resolve_backend

__all__ = [
    "DispatchingExecutor",
    "Evaluated",
    "Executor",
    "LocalExecutor",
    "PoolFactory",
    "Slot",
    "local_devices",
    "make_executor",
    "resolve_backend",
]


def _default_pool_factory() -> PoolFactory:
    from evaluators.pool import WorkerPool

    return WorkerPool


class LocalExecutor(DispatchingExecutor):
    """One evaluators.pool.WorkerPool per local GPU (or one on a CPU machine), least-loaded first."""

    def __init__(
        self,
        backend: str = "auto",
        devices: Sequence[int] = (),
        workers_per_device: int = 1,
        config: EvalConfig | None = None,
        *,
        max_attempts: int = 3,
        pool_factory: PoolFactory | None = None,
    ) -> None:
        super().__init__(max_attempts)
        self._backend = backend
        self._devices = tuple(devices)
        self.workers_per_device = workers_per_device
        self.config = config or EvalConfig()
        self._factory = pool_factory

    @property
    def backend_name(self) -> str:
        return self._backend

    async def start(self) -> None:
        if self.slots:
            return
        self._backend = resolve_backend(self._backend)
        factory = self._factory or _default_pool_factory()
        devices = self._devices or local_devices(self._backend)
        if not self.workers_per_device:
            self.workers_per_device = 1 if self._backend == "triton-interpret" else 2
        for index in devices:
            pool = factory(
                self._backend, size=self.workers_per_device, device_index=index, config=self.config
            )
            _enter(pool)
            name = "cpu" if self._backend == "triton-interpret" else f"gpu:{index}"
            self.slots.append(
                Slot(name if len(devices) == 1 else f"{name}#{index}", self.workers_per_device, pool)
            )

    async def _hardware(self, slot: Slot) -> Hardware | None:
        wait = getattr(slot.handle, "wait_hardware", None)  # WorkerPool's: a warm worker's own report
        return await asyncio.to_thread(wait) if wait is not None else None

    async def _run(
        self, slot: Slot, task: Task, candidate: Candidate, against: str, baseline: str
    ) -> EvalResult:
        if not (against or baseline):
            return await slot.handle.evaluate_async(task, candidate)
        config = self.config.compared(against, baseline)
        return await slot.handle.evaluate_async(task, candidate, config=config)

    async def close(self) -> None:
        for slot in self.slots:
            _exit(slot.handle)
        self.slots.clear()


def local_devices(backend: str) -> tuple[int, ...]:
    """Every visible GPU for GPU backends; a single pool for the interpreter."""
    if backend == "triton-interpret":
        return (0,)
    import torch

    count = torch.cuda.device_count()
    return tuple(range(count)) if count else (0,)


def _enter(pool: Any) -> None:
    if hasattr(pool, "__enter__"):
        pool.__enter__()
    elif hasattr(pool, "start"):
        pool.start()


def _exit(pool: Any) -> None:
    if hasattr(pool, "close"):
        pool.close()
    elif hasattr(pool, "__exit__"):
        pool.__exit__(None, None, None)


def make_executor(config: ExecutorConfig, eval_config: EvalConfig) -> Executor:
    """The executor `executor.workers` asks for ("local", "ray", "ray://host:port")."""
    if config.workers == "local":
        return LocalExecutor(
            config.backend,
            config.devices,
            config.workers_per_device,
            eval_config,
            max_attempts=config.max_attempts,
        )
    from evolution.ray_executor import RayExecutor

    return RayExecutor(
        config.workers,
        backend=config.backend,
        config=eval_config,
        workers_per_actor=config.workers_per_device,
        actors=config.ray_actors,
        max_attempts=config.max_attempts,
    )
