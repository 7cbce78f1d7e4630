"""WorkerPool: judges candidates in warm, single-use, killable worker processes.

    pool = WorkerPool("auto", size=2)          # `size` workers warm up at once (torch/triton imported)
    result = pool.evaluate(task, candidate)    # blocking, thread-safe, at most `size` in flight
    result = await pool.evaluate_async(...)    # the same without blocking the event loop

A taken worker is replaced at once, so the next evaluation finds a warm one. The parent follows the
worker's progress (static, compile, correctness, wait-lock, timing) and gives each stage its own budget;
a worker that overruns is killed with its whole process group. Whatever a candidate does — crash, hang,
flood its output, exhaust memory — ends that worker only and comes back as an EvalResult saying in which
stage and how. `evaluate` raises only for a bad task or an unusable backend (KernelbotError subclasses).
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluators import secrets as held_secrets
from evaluators.backends import require_backend
from evaluators.candidate import Candidate
from evaluators.config import EvalConfig
from evaluators.errors import BackendUnavailable, TaskError
from evaluators.job import Job, candidate_sha
from evaluators.launcher import POOL_DIR_PREFIX, Launcher, sweep_stale_pool_dirs
from evaluators.process import JobOutcome, Supervisor, WorkerProcess, WorkerStartError
from evaluators.result import EvalResult, HackFinding, Hardware, failure
from evaluators.sandbox import require_box_or_consent, sandbox_record
from evaluators.task import Task, load_task
from evaluators.task_files import TaskFilesRegistry

START_ATTEMPTS = 3  # consecutive workers that die while warming up before the pool gives up
# Fraction of a GPU's memory the pool's workers may hold together (each gets an equal share of it); the
# rest is left to the CUDA contexts themselves and to other processes.
DEVICE_MEMORY_IN_USE = 0.9


@dataclass
class PoolStats:
    spawned: int = 0  # worker processes started
    evaluated: int = 0  # evaluations that returned an EvalResult
    crashed: int = 0  # workers that died on their own (signal or exit) before reporting a result
    timed_out: int = 0  # workers killed because a stage ran past its budget
    killed: int = 0  # workers the pool SIGKILLed mid-job (timeouts, tampering, cancellation, close)


def config_for_job(config: EvalConfig, pool_size: int) -> dict[str, Any]:
    """The job's copy of `config`, with each worker's share of device memory filled in if left to the pool."""
    data = config.to_dict()
    if not config.device_memory_share and pool_size > 1:
        data["device_memory_share"] = DEVICE_MEMORY_IN_USE / pool_size
    return data


class _Ticket:
    """One evaluation in flight: lets evaluate_async's cancellation reach the worker."""

    def __init__(self) -> None:
        self.cancelled = False
        self.worker: WorkerProcess | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.worker is not None:
            self.worker.kill()


class _WarmSet:
    """Keeps `size` workers started ahead of demand, from one long-lived thread.

    Workers ask Linux to kill them when their parent *thread* ends (PR_SET_PDEATHSIG), so they are all
    started from this thread, which lives exactly as long as the pool.
    """

    def __init__(
        self, size: int, start: Callable[[], WorkerProcess], on_spawn: Callable[[], None], *, replace: bool
    ) -> None:
        self.size = size
        self._start = start
        self._on_spawn = on_spawn
        # How many more workers may be started: unlimited when taken workers are replaced, else `size`
        # (plus one whenever a taker finds nothing warm and nothing on the way, e.g. after a failed start).
        self._credits = math.inf if replace else size
        self._starting = 0
        self._warm: list[WorkerProcess] = []
        self._cond = threading.Condition()
        self._closed = False
        self.start_error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="kb-pool-spawner", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (len(self._warm) >= self.size or self._credits <= 0):
                    self._cond.wait()
                if self._closed:
                    return
                self._credits -= 1
                self._starting += 1
            try:
                worker = self._start()
            except OSError as exc:  # fork/exec failed (fd or process limits): tell takers, try again later
                with self._cond:
                    self._starting -= 1
                    self._credits += 1
                    self.start_error = exc
                    self._cond.notify_all()
                time.sleep(1.0)
                continue
            self._on_spawn()
            with self._cond:
                self._starting -= 1
                self.start_error = None
                if self._closed:
                    worker.kill()
                    worker.cleanup()
                    return
                self._warm.append(worker)
                self._cond.notify_all()

    def take(self) -> WorkerProcess:
        """The longest-warming worker (preferring one already ready); its replacement starts at once."""
        with self._cond:
            while not self._warm:
                if self._closed:
                    raise RuntimeError("the WorkerPool is closed")
                if self.start_error is not None:
                    raise BackendUnavailable(f"cannot start an evaluation worker: {self.start_error}")
                if self._credits <= 0 and not self._starting:
                    self._credits += 1
                    self._cond.notify_all()
                self._cond.wait(timeout=1.0)
            ready = [w for w in self._warm if w.ready or w.has_message()]
            worker = ready[0] if ready else self._warm[0]
            self._warm.remove(worker)
            self._cond.notify_all()
            return worker

    def give_back(self, worker: WorkerProcess) -> None:
        """A worker taken but not used (WorkerPool.wait_hardware): first in line for the next taker."""
        with self._cond:
            closed = self._closed
            if not closed:
                self._warm.insert(0, worker)
                self._cond.notify_all()
        if closed:
            worker.kill()
            worker.cleanup()

    def discard_all(self) -> None:
        """Kill every warm worker (they were started the wrong way); fresh ones start at once."""
        with self._cond:
            warm, self._warm = self._warm, []
            self._credits += len(warm)
            self._cond.notify_all()
        for worker in warm:
            worker.kill()
            worker.cleanup()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            warm, self._warm = self._warm, []
            self._cond.notify_all()
        for worker in warm:
            worker.kill()
            worker.cleanup()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10)


def _shutdown(
    warm: _WarmSet, busy: set[WorkerProcess], executor: ThreadPoolExecutor, launcher: Launcher, root: Path
) -> None:
    launcher.close()
    warm.close()
    for worker in list(busy):
        worker.kill()
    executor.shutdown(wait=False)
    shutil.rmtree(root, ignore_errors=True)


class WorkerPool:
    def __init__(
        self,
        backend: str = "auto",
        *,
        size: int = 2,
        device_index: int = 0,
        config: EvalConfig | None = None,
        replace_workers: bool = True,
    ) -> None:
        """Start `size` workers warming up; `replace_workers=False` starts no replacements (one-shot use)."""
        if size < 1:
            raise ValueError("WorkerPool size must be at least 1")
        self.backend = require_backend(backend, device_index)  # BackendUnavailable, checked here
        self.backend_name = self.backend.name
        self.size = size
        self.device_index = device_index
        self.config = config or EvalConfig()
        self.hardware = Hardware(backend=self.backend_name)
        self._stats = PoolStats()
        self._stats_lock = threading.Lock()
        self._task_files = TaskFilesRegistry()
        self._slots = threading.BoundedSemaphore(size)
        self._busy: set[WorkerProcess] = set()
        sweep_stale_pool_dirs(Path(tempfile.gettempdir()))
        # The OS sandbox, or consent to run without one (SandboxUnavailable, a ConfigError, otherwise).
        box = require_box_or_consent("evaluation workers")
        self.sandbox = sandbox_record()  # one line for the run's record
        self._root = Path(tempfile.mkdtemp(prefix=f"{POOL_DIR_PREFIX}{os.getpid()}-"))
        self._launcher = Launcher(self.backend, device_index, self._root, box, boxes=2 * size)
        self._warm = _WarmSet(size, self._launcher, self._spawned, replace=replace_workers)
        self._executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="kb-eval")
        self._closed = False
        self._finalizer = weakref.finalize(
            self, _shutdown, self._warm, self._busy, self._executor, self._launcher, self._root
        )

    # --- public API -----------------------------------------------------------------------------------

    @property
    def stats(self) -> PoolStats:
        with self._stats_lock:
            return replace(self._stats)

    def evaluate(
        self, task: Task | str | Path, candidate: Candidate | str, *, config: EvalConfig | None = None
    ) -> EvalResult:
        """Judge `candidate` on `task` in a fresh worker; never raises for a bad candidate."""
        return self._evaluate(task, candidate, config, _Ticket())

    async def evaluate_async(
        self, task: Task | str | Path, candidate: Candidate | str, *, config: EvalConfig | None = None
    ) -> EvalResult:
        """`evaluate` on a pool thread; cancelling the awaiting task kills the worker."""
        ticket = _Ticket()
        loop = asyncio.get_running_loop()
        call = functools.partial(self._evaluate, task, candidate, config, ticket)
        future = loop.run_in_executor(self._executor, call)
        try:
            return await future
        except asyncio.CancelledError:
            ticket.cancel()
            raise

    def wait_hardware(self) -> Hardware:
        """What the workers run on (device, driver, torch and Triton versions), as the first worker to warm up
        reports it, before any evaluation; that worker stays warm for the next one. BackendUnavailable when
        no worker can start."""
        self._warm.give_back(self._ready_worker())
        return self.hardware

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._finalizer()  # evaluations still in flight return "killed by the evaluator" results

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- one evaluation -------------------------------------------------------------------------------

    def _evaluate(
        self, task: Task | str | Path, candidate: Candidate | str, config: EvalConfig | None, ticket: _Ticket
    ) -> EvalResult:
        if self._closed:
            raise RuntimeError("the WorkerPool is closed")
        task = task if isinstance(task, Task) else load_task(task)
        source = candidate.source if isinstance(candidate, Candidate) else str(candidate)
        config = config or self.config
        sha = candidate_sha(source, task.entry)
        count = max(1, config.seeds_per_case, task.seeds or 0)
        job_config = config_for_job(config, self.size)
        job = Job(
            task_dir=str(self._launcher.task_path(task.root)),
            source=source,
            config=job_config,
            seeds=tuple(secrets.randbits(31) for _ in range(count)),
            nonce=secrets.token_hex(16),
        )
        with self._slots:
            task_files = self._task_files.begin(task.root)  # the task as it is before this candidate runs
            outcome: JobOutcome | None = None
            try:
                for _ in range(START_ATTEMPTS):
                    worker = self._ready_worker()
                    ticket.worker = worker
                    if ticket.cancelled:
                        worker.kill()
                    self._busy.add(worker)
                    try:
                        outcome = Supervisor(worker, job, config, lambda: ticket.cancelled).run()
                    finally:
                        self._busy.discard(worker)
                        worker.kill()
                        logs = worker.log_tail(config.log_limit_chars)
                        worker.cleanup()
                    # Not the candidate's doing, so try another worker: this one died before it read the
                    # job, or went down with its zygote.
                    if outcome is not None and not (outcome.crashed and worker.orphaned):
                        break
                    if outcome is not None:  # retried, yet a worker did die: the stats say so
                        with self._stats_lock:
                            self._stats.crashed += 1
            finally:
                # The worker is gone: nothing can write to the task's files any more.
                tampered = self._task_files.end(task_files)
            if outcome is None:
                raise BackendUnavailable("evaluation workers keep dying before they receive a job")
        self._count(outcome)
        hacks = outcome.hacks
        if tampered is not None:
            hacks = (*hacks, HackFinding("task_tamper", tampered, detector="runtime"))
        elif outcome.task_error is not None:
            raise TaskError(held_secrets.redact(outcome.task_error))
        hardware = worker.hardware or self.hardware
        if outcome.result is not None:
            result = outcome.result
        else:
            result = failure(task.name, sha, self.backend_name, task.regime, outcome.stage, outcome.reason)
        result = result.with_updates(
            candidate_sha=sha,
            hacks=result.hacks + hacks,
            score=0.0 if hacks else result.score,
            passed=result.passed and not hacks,
            hardware=hardware,
            logs=logs,
            duration_s=outcome.duration_s,
        )
        # A candidate may have found a secret somewhere: nothing it wrote leaves the pool unmasked.
        return result.redacted(held_secrets.redact)

    def _ready_worker(self) -> WorkerProcess:
        error: WorkerStartError | None = None
        for _ in range(START_ATTEMPTS):
            worker = self._warm.take()
            try:
                if not worker.ready:  # one given back by wait_hardware has said so already
                    worker.wait_ready()
                self.hardware = worker.hardware or self.hardware
                if worker.alive():
                    return worker
                worker.ready = False  # said ready, then died (its zygote went away)
                raise WorkerStartError(f"worker {worker.pid} died after warming up")
            except WorkerStartError as exc:
                error = exc
                with self._stats_lock:
                    self._stats.crashed += 1
                if worker.forked:
                    # A dead zygote took its forks with it and is restarted; a live one whose forks cannot
                    # warm up (a device that refuses forked processes) is given up for fresh interpreters.
                    if not self._launcher.zygote_dead:
                        self._launcher.fall_back(f"a forked worker failed to warm up: {exc}")
                    self._warm.discard_all()
            finally:
                if not worker.ready:
                    worker.kill()
                    worker.cleanup()
        raise BackendUnavailable(f"evaluation workers fail to start: {error}")

    def _spawned(self) -> None:
        with self._stats_lock:
            self._stats.spawned += 1

    def _count(self, outcome: JobOutcome) -> None:
        with self._stats_lock:
            self._stats.evaluated += 1
            self._stats.crashed += outcome.crashed
            self._stats.timed_out += outcome.timed_out
            self._stats.killed += outcome.killed


__all__ = ["PoolStats", "WorkerPool"]
