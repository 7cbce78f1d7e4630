"""The parent's side of one evaluation worker: `WorkerProcess` starts it, waits for ready, kills its whole
process group, reads back its log tail and cleans up; `Supervisor` sends it the job and follows its progress,
giving each stage its own budget.

The worker is a session leader (start_new_session), so `killpg` reaches everything it started. Liveness is
checked with waitid(WNOWAIT), which leaves the exit status in place: the process group keeps its id until
`cleanup` reaps the leader, after the group has been killed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import evaluators
from evaluators import secrets as held_secrets
from evaluators.backends.base import Backend
from evaluators.config import EvalConfig
from evaluators.gpu_lock import lock_dir
from evaluators.job import PROGRESS_STAGES, Job, LineReader, Message, ProtocolError, describe_exit, write_all
from evaluators.result import EvalResult, HackFinding, Hardware, Stage
from evaluators.sandbox import SECRET_NAME, Box, box_env
from evaluators.subprocesses import Started, kill_group
from evaluators.zygote import ZygoteClient

LOCK_WAIT_CAP_S = 3600.0  # waiting for the GPU lock has no budget of its own, but not forever
WARMUP_TIMEOUT_S = 300.0  # importing torch/triton and creating a CUDA context on a loaded machine
LOG_FILE = "worker.log"
TASKS_DIR = "tasks"  # in a pool directory: the tasks as boxed workers see them (read-only copies)
CACHE_DIR = "triton-cache"  # in a pool directory: the compiler cache its workers share
# ...and torch.compile's (Inductor's FX graph cache): each worker of a confirmation is a fresh process, and
# without it every one compiled the compile column's reference again, once per case's shapes. Shared like the
# Triton cache, which already holds the compiled kernels of those graphs; unlike it, a candidate writing there
# is flagged by the audit (evaluators.guards.audit allows the Triton cache only).
COMPILE_CACHE_DIR = "inductor-cache"
_counter = itertools.count()


class WorkerStartError(Exception):
    """A worker died or went silent while warming up (before any candidate reached it)."""


def _package_root() -> Path:
    return Path(evaluators.__file__).resolve().parent.parent


def worker_env(
    backend: Backend, cache_dir: Path, *, boxed: bool = False, compile_cache: Path | None = None
) -> dict[str, str]:
    """A worker's environment: no variable named like a secret and none holding a secret's value (whatever
    its name: --token-env GH_PAT); in a box, only the allow-list (sandbox.box_env). `cache_dir` is Triton's
    cache, `compile_cache` (when given) torch.compile's."""
    inherited = held_secrets.scrub_env(os.environ)
    inherited.pop("TRITON_INTERPRET", None)  # only the interpreter backend may set it
    if boxed:
        env = box_env(environ=inherited)
    else:
        env = {k: v for k, v in inherited.items() if not SECRET_NAME.search(k)}
    env.update(backend.worker_env())
    env["TRITON_CACHE_DIR"] = str(cache_dir)
    if compile_cache is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(compile_cache)
    env["PYTHONUNBUFFERED"] = "1"  # what a candidate printed before it crashed reaches the log
    package_root = str(_package_root())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env


def pool_worker_env(backend: Backend, pool_dir: Path) -> dict[str, str]:
    """The environment of a pool's worker outside a box: the pool's compiler caches."""
    return worker_env(backend, pool_dir / CACHE_DIR, compile_cache=pool_dir / COMPILE_CACHE_DIR)


def worker_box(backend: Backend, pool_dir: Path, workdir: Path | None) -> Box:
    """The box of one worker: its own folder and the pool's compiler cache writable, the pool's task copies
    and kernelbot's source read-only, the GPU devices on a GPU backend."""
    cache, compile_cache = pool_dir / CACHE_DIR, pool_dir / COMPILE_CACHE_DIR
    tasks = pool_dir / TASKS_DIR
    for path in (cache, compile_cache, tasks):
        path.mkdir(exist_ok=True)
    # The GPU lock's files are shared by every worker on the machine (evaluators.gpu_lock): the folder is
    # shown writable, or each box would lock a private copy and timings would overlap.
    locks = (lock_dir(),)
    return Box(
        scratch=None,
        writable=(cache, compile_cache, *locks) + ((workdir,) if workdir is not None else ()),
        read_only=(tasks, _package_root()),
        env=worker_env(backend, cache, boxed=True, compile_cache=compile_cache),
        cwd=workdir or pool_dir,
        gpu=backend.name != "triton-interpret",
    )


class _ExecChild:
    """A worker started as a fresh interpreter: a child of this process (in a box: bwrap is the child)."""

    def __init__(self, started: Started) -> None:
        self.started = started
        self.pid = started.pid

    def status(self) -> int | None:
        """Exit status as Popen reports it (-signal for a signal), without reaping; None while running."""
        if self.started.popen.returncode is not None:
            return self.started.status(self.started.popen.returncode)
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return self.started.poll()
        if info is None:
            return None
        return self.started.status(info.si_status if info.si_code == os.CLD_EXITED else -info.si_status)

    def kill(self) -> None:
        self.started.kill()

    def reap(self) -> None:
        self.started.reap()  # boxed: until everything the candidate started inside is gone too


class _ForkedChild:
    """A worker forked by the pool's zygote, which reaps it and reports its status."""

    def __init__(self, zygote: ZygoteClient, pid: int) -> None:
        self.zygote = zygote
        self.pid = pid

    def status(self) -> int | None:
        return self.zygote.status(self.pid)

    def kill(self) -> None:
        kill_group(self.pid)  # the zygote makes each worker a session leader

    def reap(self) -> None:
        if self.zygote.wait_exit(self.pid, timeout=10) is None and self.zygote.boxed is not None:
            self.zygote.close()  # stopped or hung (a candidate's doing): its box goes, and all inside
        self.zygote.forget(self.pid)


class WorkerProcess:
    def __init__(
        self, child: _ExecChild | _ForkedChild, control_fd: int, job_fd: int, workdir: Path, log_fd: int
    ) -> None:
        self.child = child
        self.pid = child.pid
        self.workdir = workdir
        # The log is read through this descriptor, opened before any candidate existed: the candidate may
        # replace the file in its own writable folder (a symbolic link to a file of ours), not the fd.
        self._log_fd = log_fd
        self._control = LineReader(control_fd)
        self._job_fd: int | None = job_fd
        self.ready = False
        self.hardware: Hardware | None = None
        self.killed = False
        self._cleaned = False

    @property
    def forked(self) -> bool:
        return isinstance(self.child, _ForkedChild)

    @property
    def orphaned(self) -> bool:
        """Forked by a zygote that has since died (taking this worker with it)."""
        return isinstance(self.child, _ForkedChild) and self.child.zygote.dead

    @staticmethod
    def new_workdir(pool_dir: Path) -> tuple[Path, int]:
        """A fresh folder for one worker (a name no earlier candidate could guess) and its log, opened."""
        workdir = pool_dir / f"w-{os.getpid()}-{next(_counter)}-{secrets.token_hex(4)}"
        workdir.mkdir()  # not parents: a pool directory removed by close() must stay removed
        log_fd = os.open(workdir / LOG_FILE, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        return workdir, log_fd

    @classmethod
    def fork(
        cls, zygote: ZygoteClient, *, backend: Backend, device_index: int, pool_dir: Path
    ) -> WorkerProcess:
        """A worker forked from the pool's zygote (OSError when the zygote is gone); a boxed zygote's
        worker gets its folder in the zygote's box."""
        workdir, log_fd = cls.new_workdir(zygote.box_dir if zygote.boxed is not None else pool_dir)
        try:
            pid, control_fd, job_fd = zygote.spawn(workdir, backend.name, device_index)
        except BaseException:
            os.close(log_fd)
            raise
        return cls(_ForkedChild(zygote, pid), control_fd, job_fd, workdir, log_fd)

    @classmethod
    def start(
        cls, *, backend: Backend, device_index: int, pool_dir: Path, boxed: bool = False
    ) -> WorkerProcess:
        """A worker started as a fresh interpreter (`python -m evaluators.worker`); `boxed`: in its own
        sandbox.Box, whose namespace dies with it."""
        workdir, log_fd = cls.new_workdir(pool_dir)
        control_r, control_w = os.pipe()
        job_r, job_w = os.pipe()
        command = [
            sys.executable,
            "-m",
            "evaluators.worker",
            f"--control-fd={control_w}",
            f"--job-fd={job_r}",
            # In a box the worker's parent is the namespace's PID 1 (bwrap), which dies with this thread.
            f"--parent-pid={1 if boxed else os.getpid()}",
            f"--backend={backend.name}",
            f"--device-index={device_index}",
            f"--workdir={workdir}",
        ]
        try:
            with open(workdir / LOG_FILE, "ab") as log:
                fds = (control_w, job_r)
                if boxed:
                    box = worker_box(backend, pool_dir, workdir)
                    env = None  # the box's own
                else:
                    box, env = None, pool_worker_env(backend, pool_dir)
                started = Started(
                    command,
                    box=box,
                    env=env,
                    pass_fds=fds,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    cwd=workdir,
                )
                child = _ExecChild(started)
        except BaseException:
            for fd in (control_r, control_w, job_r, job_w, log_fd):
                os.close(fd)
            raise
        os.close(control_w)
        os.close(job_r)
        return cls(child, control_r, job_w, workdir, log_fd)

    # --- warm-up and messages -------------------------------------------------------------------------

    def has_message(self) -> bool:
        return self._control.ready()

    def wait_ready(self, timeout: float = WARMUP_TIMEOUT_S) -> Hardware:
        try:
            message = self.next_message(timeout)
        except ProtocolError as exc:
            raise WorkerStartError(f"worker {self.pid} sent garbage while warming up: {exc}") from exc
        if message is None or message.kind != "ready":
            if message is None and not self._control.eof:
                self.kill()
                raise WorkerStartError(f"worker {self.pid} was not ready after {timeout:g} s")
            how = describe_exit(self.wait_exit(5.0), killed_by_us=self.killed)
            raise WorkerStartError(f"worker {how} while warming up; its log ends:\n{self.log_tail(2000)}")
        self.ready = True
        hw = message.body.get("hardware") or {}
        self.hardware = Hardware(**{k: v for k, v in hw.items() if k in Hardware.__dataclass_fields__})
        return self.hardware

    def send_job(self, job: Job) -> bool:
        """Hand the job over; False when the worker is already gone (it never saw the candidate)."""
        assert self._job_fd is not None, "a worker takes exactly one job"
        fd, self._job_fd = self._job_fd, None
        try:
            write_all(fd, job.encode())
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False
        finally:
            os.close(fd)

    @property
    def eof(self) -> bool:
        return self._control.eof

    def next_message(self, timeout: float | None) -> Message | None:
        """The next control message; None on timeout or end of file. Garbage raises ProtocolError."""
        line = self._control.read_line(timeout)
        if line is None:
            return None
        try:
            return Message.decode(line)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ProtocolError(f"an undecodable line ({exc})") from exc

    # --- life and death -------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.child.status() is None

    def wait_exit(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while True:
            status = self.child.status()
            if status is not None or time.monotonic() >= deadline:
                return status
            time.sleep(0.01)

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (safe to call from any thread, any number of times)."""
        if self._cleaned:
            return
        if self.alive():
            self.killed = True
        self.child.kill()

    def cleanup(self) -> None:
        """Kill the group, reap the worker, close the pipes and delete its directory."""
        if self._cleaned:
            return
        self.kill()
        self.child.reap()
        self._cleaned = True
        with contextlib.suppress(OSError):
            os.close(self._control.fd)
        if self._job_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._job_fd)
            self._job_fd = None
        with contextlib.suppress(OSError):
            os.close(self._log_fd)
        shutil.rmtree(self.workdir, ignore_errors=True)

    # --- logs -----------------------------------------------------------------------------------------

    def log_tail(self, limit: int) -> str:
        """The last `limit` characters the worker (and the candidate) wrote to stdout/stderr."""
        if limit <= 0:
            return ""
        try:
            size = os.fstat(self._log_fd).st_size
            start = max(0, size - 4 * limit)
            text = os.pread(self._log_fd, size - start, start).decode("utf-8", errors="replace")
        except OSError:
            return ""
        if len(text) <= limit and size <= 4 * limit:
            return text
        return "[... earlier output truncated ...]\n" + text[-limit:]


@dataclass
class JobOutcome:
    stage: Stage = Stage.STATIC
    reason: str = ""
    result: EvalResult | None = None
    task_error: str | None = None
    hacks: tuple[HackFinding, ...] = ()
    duration_s: float = 0.0
    crashed: bool = False
    timed_out: bool = False
    killed: bool = False


class Supervisor:
    """Sends one job and follows the worker's progress, enforcing each stage's budget."""

    def __init__(
        self, worker: WorkerProcess, job: Job, config: EvalConfig, cancelled: Callable[[], bool]
    ) -> None:
        self.worker = worker
        self.job = job
        self.config = config
        self.cancelled = cancelled
        self.progress = "static"

    def budget(self) -> float:
        c = self.config
        budgets = {
            "static": c.compile_timeout_s,
            "compile": c.compile_timeout_s,
            "correctness": c.correctness_timeout_s,
            "wait-lock": LOCK_WAIT_CAP_S,
            "timing": c.timing_timeout_s,
        }
        return budgets[self.progress]

    @property
    def stage(self) -> Stage:
        return Stage(PROGRESS_STAGES[self.progress])

    def run(self) -> JobOutcome | None:
        start = time.monotonic()
        if not self.worker.send_job(self.job):
            return None
        outcome = self._follow()
        outcome.duration_s = time.monotonic() - start
        return outcome

    def _follow(self) -> JobOutcome:
        deadline = time.monotonic() + self.budget()
        while True:
            try:
                message = self.worker.next_message(max(0.0, deadline - time.monotonic()))
            except ProtocolError as exc:
                return self._tampered(str(exc))
            if message is None and not self.worker.eof:
                return self._timed_out()
            if message is None:
                return self._died()
            if message.nonce != self.job.nonce:
                return self._tampered(f"a {message.kind!r} message with a wrong nonce")
            if message.kind == "progress" and message.body.get("stage") in PROGRESS_STAGES:
                self.progress = message.body["stage"]
                deadline = time.monotonic() + self.budget()
            elif message.kind == "result":
                return self._finished(message)
            elif message.kind == "task_error" and self.progress == "static":
                return JobOutcome(task_error=str(message.body.get("message", "the task cannot be loaded")))
            else:
                return self._tampered(f"an unexpected {message.kind!r} message during {self.progress}")

    def _finished(self, message: Message) -> JobOutcome:
        try:
            result = EvalResult.from_dict(message.body["result"])
        except (KeyError, TypeError, ValueError) as exc:
            return self._tampered(f"a malformed result ({type(exc).__name__}: {exc})")
        if result.stage is not self.stage:  # the worker reports each stage before it ends there
            return self._tampered(f"a result for stage {result.stage.value} during {self.progress}")
        return JobOutcome(stage=result.stage, result=result)

    def _timed_out(self) -> JobOutcome:
        self.worker.kill()
        budget = self.budget()
        if self.progress == "wait-lock":
            reason = f"waited more than {budget:g} s for the GPU lock"
        else:
            reason = f"timed out after {budget:g} s in {self.progress}"
        return JobOutcome(stage=self.stage, reason=reason, timed_out=True, killed=True)

    def _died(self) -> JobOutcome:
        if self.cancelled():
            return JobOutcome(stage=self.stage, reason="cancelled by the caller", killed=True)
        code = self.worker.wait_exit(timeout=5.0)
        if code is None:  # still running with its control pipe closed: only the candidate could do that
            return self._tampered("end of file while the worker was still running")
        how = describe_exit(
            code, output_limit_mb=self.config.output_limit_mb, killed_by_us=self.worker.killed
        )
        reason = f"worker {how} during {self.progress}"
        return JobOutcome(
            stage=self.stage, reason=reason, crashed=not self.worker.killed, killed=self.worker.killed
        )

    def _tampered(self, what: str) -> JobOutcome:
        self.worker.kill()
        evidence = f"the evaluator's control channel received {what}"
        finding = HackFinding("sandbox_escape", evidence, detector="runtime")
        return JobOutcome(stage=self.stage, reason=f"flagged: {evidence}", hacks=(finding,), killed=True)
