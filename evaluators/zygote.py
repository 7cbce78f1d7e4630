"""A fork server for evaluation workers: one process per pool that imports torch, triton and the evaluator
once, then forks each new worker from that warm image (a fork takes ~0.1 s; a fresh interpreter ~3 s of CPU).

It never touches the GPU itself (CUDA cannot be used across fork), so each forked worker still creates its
own device context, after the fork. The pool talks to it over a SOCK_SEQPACKET socket:

    pool -> zygote   {"workdir", "backend", "device_index"} + the worker's two pipe ends (SCM_RIGHTS)
    zygote -> pool   {"pid": N}                       the worker exists (its own process group)
    zygote -> pool   {"exit": N, "status": S}         it ended (S as Popen.returncode: -signal or code)

When a worker ends, the zygote first SIGKILLs the worker's process group (anything the candidate left
behind), then reaps it and reports. Workers die with the zygote (PR_SET_PDEATHSIG), the zygote with the pool.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from evaluators import worker

MESSAGE_BYTES = 1 << 16
# Modules a worker will import anyway; loaded before forking when present (missing ones are skipped).
_OPTIONAL_PRELOAD = (
    "evaluators.static_checks",
    "evaluators.guards",
    "evaluators.correctness.stage",
    "evaluators.timing.stage",  # the package itself loads its stage lazily
)


# --- the zygote process ---------------------------------------------------------------------------------


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None:
            return
        pid = info.si_pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # the zombie leader still holds the group id: stragglers die
        _, raw = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(raw)
        with contextlib.suppress(OSError):
            sock.send(json.dumps({"exit": pid, "status": status}).encode())


def _fork_worker(sock: socket.socket, wakeup: tuple[int, int], request: dict, fds: list[int]) -> None:
    control_fd, job_fd = fds
    workdir = Path(request["workdir"])
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the worker
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setpgid(0, 0)
        sock.close()
        for fd in wakeup:
            os.close(fd)
        worker.die_with_parent(os.getppid())
        os.chdir(workdir)
        log = os.open(workdir / "worker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        body = lambda: worker.serve(control_fd, job_fd, request["backend"], request["device_index"], workdir)
        worker.run_guarded(body)
        os._exit(70)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also here, so the group exists before the pool can try to kill it
    for fd in fds:
        os.close(fd)
    sock.send(json.dumps({"pid": pid}).encode())


def serve(sock: socket.socket) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    import select

    while True:
        readable, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
            _reap(sock)
        if sock in readable:
            data, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, 2)
            if not data:  # the pool went away: workers follow through PR_SET_PDEATHSIG
                os._exit(0)
            _fork_worker(sock, (wake_r, wake_w), json.loads(data), fds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m evaluators.zygote")
    parser.add_argument("--socket-fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    worker.die_with_parent(args.parent_pid)
    sock = socket.socket(fileno=args.socket_fd)
    worker.place_off_timing_cores()  # its forks start where it is
    worker.preload()
    import torch

    if torch.cuda.is_initialized():  # a fork of a process that used CUDA cannot use the GPU
        raise RuntimeError("CUDA was initialised while preloading; the pool falls back to exec'd workers")
    serve(sock)


# --- the pool's side ----------------------------------------------------------------------------------


class ZygoteClient:
    """Starts the zygote, asks it for workers and tracks how they ended."""

    def __init__(self, env: dict[str, str], pool_dir: Path, reply_timeout: float) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        self._reply_timeout = reply_timeout
        with open(pool_dir / "zygote.log", "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "evaluators.zygote",
                    f"--socket-fd={theirs.fileno()}",
                    f"--parent-pid={os.getpid()}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(theirs.fileno(),),
                cwd=pool_dir,
                env=env,
                start_new_session=True,
            )
        theirs.close()
        self._replies: queue.Queue[int | None] = queue.Queue()
        self._exits: dict[int, int] = {}
        self._cond = threading.Condition()
        self.dead = False
        self._reader = threading.Thread(target=self._read, name="kb-zygote-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(MESSAGE_BYTES)
            except OSError:
                data = b""
            if not data:
                with self._cond:
                    self.dead = True
                    self._cond.notify_all()
                self._replies.put(None)
                return
            message = json.loads(data)
            if "pid" in message:
                self._replies.put(int(message["pid"]))
            elif "exit" in message:
                with self._cond:
                    self._exits[int(message["exit"])] = int(message["status"])
                    self._cond.notify_all()

    def spawn(self, workdir: Path, backend: str, device_index: int) -> tuple[int, int, int]:
        """Fork a worker; returns (pid, control read fd, job write fd). OSError when the zygote is gone."""
        if self.dead:
            raise OSError("the worker zygote has exited")
        control_r, control_w = os.pipe()
        job_r, job_w = os.pipe()
        request = {"workdir": str(workdir), "backend": backend, "device_index": device_index}
        try:
            socket.send_fds(self._sock, [json.dumps(request).encode()], [control_w, job_r])
        except OSError:
            for fd in (control_r, job_w):
                os.close(fd)
            raise
        finally:
            os.close(control_w)
            os.close(job_r)
        try:
            pid = self._replies.get(timeout=self._reply_timeout)
        except queue.Empty:
            pid = None
        if pid is None:
            os.close(control_r)
            os.close(job_w)
            raise OSError("the worker zygote did not answer a spawn request")
        return pid, control_r, job_w

    def status(self, pid: int) -> int | None:
        with self._cond:
            if pid in self._exits:
                return self._exits[pid]
            return -signal.SIGKILL if self.dead else None

    def wait_exit(self, pid: int, timeout: float) -> int | None:
        with self._cond:
            self._cond.wait_for(lambda: pid in self._exits or self.dead, timeout=timeout)
        return self.status(pid)

    def forget(self, pid: int) -> None:
        with self._cond:
            self._exits.pop(pid, None)

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._reader.join(timeout=5)


if __name__ == "__main__":
    worker.run_guarded(main)
