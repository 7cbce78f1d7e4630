"""Evaluation on a Ray cluster: one actor per GPU (num_gpus=1, so Ray pins it through CUDA_VISIBLE_DEVICES),
each hosting an evaluators.pool.WorkerPool — the same judging code path as a local run.

The task directory travels with each call as a small bundle of its files (the nodes need not share a disk);
an actor unpacks each distinct bundle once. When an actor dies mid-evaluation, it is replaced and the
evaluation is retried on another actor (evolution.dispatch.DispatchingExecutor).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evaluators.candidate import Candidate
from evaluators.config import EvalConfig
from evaluators.errors import KernelbotError
from evaluators.result import EvalResult, Hardware
from evaluators.task import Task, load_task
from evolution.dispatch import DispatchingExecutor, PoolFactory, Slot, resolve_backend
from evolution.errors import SearchConfigError, SearchError

BUNDLE_SKIP = {"candidates", "__pycache__", ".git"}
BUNDLE_MAX_BYTES = 256 << 20


@dataclass(frozen=True)
class TaskBundle:
    name: str
    digest: str
    files: dict[str, bytes]  # path relative to the task root -> content

    @classmethod
    def of(cls, task: Task) -> TaskBundle:
        files: dict[str, bytes] = {}
        for path in sorted(task.root.rglob("*")):
            rel = path.relative_to(task.root)
            if path.is_file() and not (set(rel.parts) & BUNDLE_SKIP):
                files[rel.as_posix()] = path.read_bytes()
        size = sum(len(b) for b in files.values())
        if size > BUNDLE_MAX_BYTES:
            raise SearchConfigError(f"task {task.root} is {size >> 20} MiB, too large to ship to Ray actors")
        h = hashlib.sha256()
        for name, data in files.items():
            h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        return cls(task.name, h.hexdigest()[:16], files)

    def unpack(self, into: Path) -> Path:
        root = into / f"{self.name}-{self.digest}"
        if not (root / "task.toml").is_file():
            into.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=into))
            for rel, data in self.files.items():
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            os.replace(staging, root)
        return root


class EvalActor:
    """Lives in a Ray worker process: a WorkerPool on the GPU Ray gave it (device 0 of its visible set)."""

    def __init__(
        self, backend: str, config: dict[str, Any], pool_size: int, pool_factory: PoolFactory | None
    ) -> None:
        if pool_factory is None:
            from evaluators.pool import WorkerPool

            pool_factory = WorkerPool
        self.config = EvalConfig.from_dict(config)
        self.pool = pool_factory(backend, size=pool_size, device_index=0, config=self.config)
        if hasattr(self.pool, "__enter__"):
            self.pool.__enter__()
        self._tasks: dict[str, Task] = {}
        self._dir = Path(tempfile.mkdtemp(prefix="kernelbot-ray-tasks-"))

    def describe(self) -> dict[str, Any]:
        import ray

        return {
            "pid": os.getpid(),
            "node": ray.get_runtime_context().get_node_id(),
            "gpus": ray.get_gpu_ids(),
        }

    async def hardware(self) -> dict[str, Any] | None:
        """The pool's workers' own report (GPU, driver, versions), as a plain dict across the wire."""
        wait = getattr(self.pool, "wait_hardware", None)
        return asdict(await asyncio.to_thread(wait)) if wait is not None else None

    async def evaluate(self, bundle: TaskBundle, source: str, against: str = "", baseline: str = "") -> str:
        task = self._tasks.get(bundle.digest)
        if task is None:
            task = load_task(bundle.unpack(self._dir))
            self._tasks[bundle.digest] = task
        candidate = Candidate(source=source, entry=task.entry)
        if against or baseline:
            config = self.config.compared(against, baseline)
            result = await self.pool.evaluate_async(task, candidate, config=config)
        else:
            result = await self.pool.evaluate_async(task, candidate)
        return result.to_json()  # JSON across the wire: no class pickling between nodes


class RayExecutor(DispatchingExecutor):
    def __init__(
        self,
        address: str = "ray",
        *,
        backend: str = "auto",
        config: EvalConfig | None = None,
        workers_per_actor: int = 1,
        actors: int = 0,
        max_attempts: int = 3,
        max_replacements: int = 4,
        pool_factory: PoolFactory | None = None,
    ) -> None:
        super().__init__(max_attempts)
        self.address = address
        self._backend = backend
        self.config = config or EvalConfig()
        self.workers_per_actor = workers_per_actor
        self.actors = actors
        self.max_replacements = max_replacements
        self._factory = pool_factory
        self._started_ray = False
        self._replacements = 0
        self._counter = 0
        self._bundles: dict[Path, TaskBundle] = {}
        self._gpus_per_actor = 0.0

    @property
    def backend_name(self) -> str:
        return self._backend

    async def start(self) -> None:
        ray = _import_ray()
        if not ray.is_initialized():
            if self.address == "ray":
                ray.init(include_dashboard=False, log_to_driver=False)
            else:
                try:
                    ray.init(address=self.address, log_to_driver=False)
                except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ... for a bad address
                    raise SearchConfigError(f"cannot connect to Ray at {self.address}: {exc}") from exc
            self._started_ray = True
        gpus = int(ray.cluster_resources().get("GPU", 0))
        self._gpus_per_actor = 1.0 if gpus else 0.0
        if self._backend == "auto":
            self._backend = "triton-cuda" if gpus else resolve_backend("auto")
        count = self.actors or gpus or 2
        if not self.workers_per_actor:
            self.workers_per_actor = 2 if gpus else 1
        for _ in range(count):
            self.slots.append(self._new_slot())
        # Fail now, with the reason, if an actor cannot come up (bad backend, missing package on a node).
        for slot in self.slots:
            try:
                await slot.handle.describe.remote()
            except Exception as exc:
                raise SearchError(f"Ray evaluation actor {slot.name} failed to start: {_cause(exc)}") from exc

    def _new_slot(self) -> Slot:
        ray = _import_ray()
        remote_cls = ray.remote(EvalActor).options(
            num_gpus=self._gpus_per_actor, num_cpus=0 if self._gpus_per_actor else 1, max_concurrency=64
        )
        handle = remote_cls.remote(
            self._backend, self.config.to_dict(), self.workers_per_actor, self._factory
        )
        self._counter += 1
        return Slot(f"ray-actor-{self._counter}", self.workers_per_actor, handle)

    def _bundle(self, task: Task) -> TaskBundle:
        if task.root not in self._bundles:
            self._bundles[task.root] = TaskBundle.of(task)
        return self._bundles[task.root]

    async def _hardware(self, slot: Slot) -> Hardware | None:
        reported = await slot.handle.hardware.remote()
        return Hardware(**reported) if reported else None

    async def _run(
        self, slot: Slot, task: Task, candidate: Candidate, against: str, baseline: str
    ) -> EvalResult:
        ray = _import_ray()
        try:
            text = await slot.handle.evaluate.remote(self._bundle(task), candidate.source, against, baseline)
        except ray.exceptions.RayTaskError as exc:
            cause = _cause(exc)
            if isinstance(cause, KernelbotError):
                raise cause from None
            raise
        return EvalResult.from_json(text)

    async def _on_failure(self, slot: Slot, exc: BaseException) -> None:
        ray = _import_ray()
        if isinstance(exc, ray.exceptions.RayActorError):
            slot.alive = False
            if self._replacements < self.max_replacements:
                self._replacements += 1
                self.slots.append(self._new_slot())
        elif slot.failures >= 2:
            slot.alive = False
            ray.kill(slot.handle, no_restart=True)

    async def close(self) -> None:
        ray = _import_ray()
        for slot in self.slots:
            with contextlib.suppress(Exception):  # an actor that is already gone is fine
                ray.kill(slot.handle, no_restart=True)
        self.slots.clear()
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise SearchConfigError("--workers ray needs Ray: pip install 'kernelbot[ray]'") from exc
    return ray


def _cause(exc: BaseException) -> BaseException:
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc
