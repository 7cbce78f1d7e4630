"""How a pool starts its workers (forked from a zygote, or as fresh interpreters) and where their files go.

Each pool owns one directory under the temp dir, `kernelbot-pool-<pid>-<random>/` (the private Triton and
torch.compile caches, the zygote's log, one folder per worker with its log and candidate file); `close()`
removes it, and a new pool removes those whose process died without closing (SIGKILL, OOM).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import threading
from pathlib import Path

from evaluators.backends import Backend
from evaluators.errors import BackendUnavailable
from evaluators.process import (
    TASKS_DIR,
    WARMUP_TIMEOUT_S,
    WorkerProcess,
    pool_worker_env,
    worker_box,
)
from evaluators.sandbox import Availability
from evaluators.zygote import ZygoteClient

SPAWN_ENV = "KERNELBOT_WORKER_SPAWN"
POOL_DIR_PREFIX = "kernelbot-pool-"


class Launcher:
    """Starts workers: forked from the pool's zygote (fast), or as fresh interpreters.

    $KERNELBOT_WORKER_SPAWN picks "fork" (the default on Linux) or "exec". A pool falls back to "exec" for
    good when the zygote cannot be started or a forked worker fails to warm up.

    With an OS sandbox (`box`, evaluators.sandbox), no two candidates share a box at the same time: in
    "exec" mode each worker is a fresh interpreter in a box of its own; in "fork" mode each zygote lives in a
    box of its own (with its folder `box-N/` in the pool directory) and serves one worker at a time,
    clearing the box between two; the pool keeps as many zygotes as it has workers warm or busy.
    """

    def __init__(
        self,
        backend: Backend,
        device_index: int,
        pool_dir: Path,
        box: Availability | None = None,
        *,
        boxes: int = 1,
    ) -> None:
        """`boxes`: boxed zygotes to keep started (the pool's warm workers plus its busy ones), all warming
        up at once from the first spawn on, so that none starts while candidates are being judged."""
        self.boxed = box is not None and box.ok
        default = "fork" if sys.platform.startswith("linux") else "exec"
        self.mode = os.environ.get(SPAWN_ENV, default)
        if self.mode not in ("fork", "exec"):
            raise BackendUnavailable(f"${SPAWN_ENV} must be 'fork' or 'exec', not {self.mode!r}")
        self.backend = backend
        self.device_index = device_index
        self.pool_dir = pool_dir
        self.fallback_reason = ""
        self.closed = False
        self._zygote: ZygoteClient | None = None  # the last one used
        self._boxes: list[ZygoteClient] = []  # boxed zygotes
        self._boxes_started = 0
        self._box_target = max(1, boxes)
        self._staged: dict[str, Path] = {}
        self._stage_lock = threading.Lock()

    def __call__(self) -> WorkerProcess:
        """Start one worker (called from the pool's spawner thread only)."""
        if self.closed:
            raise OSError("the WorkerPool is closing")
        if self.mode == "fork":
            for _ in range(2):  # a zygote that died under us is replaced once; a fresh one failing: given up
                try:
                    if self.boxed:
                        self._zygote = self._idle_box()
                    elif self._zygote is None or self._zygote.dead:
                        self._restart_zygote()
                    assert self._zygote is not None
                    return WorkerProcess.fork(
                        self._zygote,
                        backend=self.backend,
                        device_index=self.device_index,
                        pool_dir=self.pool_dir,
                    )
                except OSError as exc:
                    if self.closed:
                        raise
                    error = exc
                    if self._zygote is not None:
                        self._zygote.close()
                        self._zygote = None
            self.fall_back(f"the worker zygote failed: {error}")
        return WorkerProcess.start(
            backend=self.backend, device_index=self.device_index, pool_dir=self.pool_dir, boxed=self.boxed
        )

    def task_path(self, task_root: Path) -> Path:
        """Where a worker reads the task: the task itself, or, for boxed workers, a copy in the pool's task
        folder, which every box shows read-only (a worker started before the task was known sees it too)."""
        if not self.boxed:
            return task_root
        key = _task_key(task_root)
        with self._stage_lock:
            staged = self._staged.get(key)
            if staged is None or not staged.is_dir():
                staged = self.pool_dir / TASKS_DIR / key
                if not staged.is_dir():
                    partial = staged.with_name(f".{key}.partial")
                    shutil.rmtree(partial, ignore_errors=True)
                    shutil.copytree(task_root, partial, symlinks=False)
                    os.replace(partial, staged)
                self._staged[key] = staged
        return staged

    def _restart_zygote(self) -> None:
        if self._zygote is not None:
            self._zygote.close()
        env = pool_worker_env(self.backend, self.pool_dir)
        self._zygote = ZygoteClient(env, self.pool_dir, WARMUP_TIMEOUT_S)

    def _idle_box(self) -> ZygoteClient:
        """A boxed zygote with no worker alive (only from the spawner thread). Dead ones are dropped and the
        set topped up to its target; starting one does not wait for it to warm up."""
        for zygote in list(self._boxes):
            if zygote.dead:
                zygote.close()
                self._boxes.remove(zygote)
        idle = [z for z in self._boxes if z.idle]
        while len(self._boxes) < self._box_target or not idle:
            self._boxes.append(self._start_box())
            idle.append(self._boxes[-1])
        return idle[0]

    def _start_box(self) -> ZygoteClient:
        self._boxes_started += 1
        box_dir = self.pool_dir / f"box-{self._boxes_started}"
        box_dir.mkdir()
        box = worker_box(self.backend, self.pool_dir, box_dir)
        return ZygoteClient(dict(box.env), box_dir, WARMUP_TIMEOUT_S, box=box)

    @property
    def zygote_dead(self) -> bool:
        return self._zygote is None or self._zygote.dead

    def fall_back(self, reason: str) -> None:
        if self.mode == "fork":
            self.mode = "exec"
            self.fallback_reason = reason

    def close(self) -> None:
        self.closed = True
        for zygote in {id(z): z for z in [*self._boxes, *([self._zygote] if self._zygote else [])]}.values():
            zygote.close()  # its forks follow it (PR_SET_PDEATHSIG); a spawn waiting on it returns


def _task_key(root: Path) -> str:
    """The task's path and its files' names, sizes and modification times: a task edited on disk between
    two evaluations gets a fresh copy."""
    digest = hashlib.sha256(str(root.resolve()).encode())
    for path in sorted(root.rglob("*")):
        if path.is_file():
            stat = path.stat()
            digest.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return f"{root.name}-{digest.hexdigest()[:16]}"


def sweep_stale_pool_dirs(parent: Path) -> None:
    """Remove pool directories left by processes that died without closing their pool (SIGKILL, OOM)."""
    for path in parent.glob(f"{POOL_DIR_PREFIX}*-*"):
        pid = path.name[len(POOL_DIR_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or not path.is_dir() or path.stat().st_uid != os.getuid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            pass
