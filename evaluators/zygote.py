"""A fork server for evaluation workers: one process per pool that imports torch, triton and the evaluator
once, then forks each new worker from that warm image (a fork takes ~0.1 s; a fresh interpreter ~3 s of CPU).

It never touches the GPU itself (CUDA cannot be used across fork), so each forked worker still creates its
own device context, after the fork. The pool talks to it over a SOCK_SEQPACKET socket:

    pool -> zygote   {"workdir", "backend", "device_index"} + the worker's two pipe ends (SCM_RIGHTS)
    worker -> pool   {"pid": N}                       the worker exists (its own process group)
    zygote -> pool   {"exit": N, "status": S}         it ended (S as Popen.returncode: -signal or code)

The worker announces itself, so the kernel attaches its process id as the pool sees it (SO_PASSCRED): a
zygote in an OS sandbox (evaluators.sandbox) lives in its own PID namespace, where N is another number.

When a worker ends, the zygote first SIGKILLs the worker's process group (anything the candidate left
behind), then reaps it and reports. In a box (--boxed), the zygote serves one worker at a time and, before
reporting, kills every other process in its namespace and empties the box's private /tmp, so nothing one
candidate started or left there meets the next; it is not dumpable, so a candidate cannot ptrace it or
read its memory. Workers die with the zygote (PR_SET_PDEATHSIG), the zygote with the pool.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import queue
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from evaluators import worker
from evaluators.sandbox import Box
from evaluators.subprocesses import BoxedProcess, Started, kill_group

MESSAGE_BYTES = 1 << 16
# Modules a worker will import anyway; loaded before forking when present (missing ones are skipped).
_OPTIONAL_PRELOAD = (
    "evaluators.static.checks",
    "evaluators.guards",
    "evaluators.correctness.stage",
    "evaluators.timing.stage",  # the package itself loads its stage lazily
)


# --- the zygote process ---------------------------------------------------------------------------------


def _sweep_namespace() -> None:
    """Kill every process of this PID namespace but its PID 1 (bwrap) and this zygote, until none is left
    (a fork loop dies too), then empty the private /tmp. Only ever called inside a box."""
    me = os.getpid()
    for _ in range(100):
        strays = [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, me)]
        if not strays:
            break
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in strays:  # killed children of ours are zombies until reaped
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.001)
    # What the box binds in under /tmp (the pool's task copies, compiler cache and GPU lock folder) is shared
    # with every other box: only this box's own files go.
    shared = _mount_points()
    for entry in os.listdir("/tmp"):
        path = os.path.join("/tmp", entry)
        if any(m == path or m.startswith(path + "/") for m in shared):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _mount_points() -> set[str]:
    """The mount points this process sees (/proc/self/mountinfo's fifth field, octal escapes undone)."""
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return set()
    return {
        re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
        for line in lines
        if len(line.split()) > 4
    }


def _reap(sock: socket.socket, boxed: bool) -> None:
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None:
            return
        pid = info.si_pid
        kill_group(pid)  # the zombie leader still holds the group id: stragglers die
        _, raw = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(raw)
        if boxed:
            _sweep_namespace()
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
        sock.send(json.dumps({"pid": os.getpid()}).encode())  # the kernel adds our pid as the pool sees it
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


def serve(sock: socket.socket, boxed: bool = False) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    import select

    while True:
        watched: list[socket.socket | int] = [sock, wake_r]
        readable, _, _ = select.select(watched, [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
            _reap(sock, boxed)
        if sock in readable:
            data, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, 2)
            if not data:  # the pool went away: workers follow through PR_SET_PDEATHSIG
                os._exit(0)
            _fork_worker(sock, (wake_r, wake_w), json.loads(data), fds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m evaluators.zygote")
    parser.add_argument("--socket-fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--boxed", action="store_true", help="inside a box of its own (see the docstring)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    worker.die_with_parent(args.parent_pid)
    if args.boxed:
        _not_dumpable()
    sock = socket.socket(fileno=args.socket_fd)
    worker.place_off_timing_cores()  # its forks start where it is
    worker.preload()
    import torch

    if torch.cuda.is_initialized():  # a fork of a process that used CUDA cannot use the GPU
        raise RuntimeError("CUDA was initialised while preloading; the pool falls back to exec'd workers")
    serve(sock, boxed=args.boxed)


def _not_dumpable() -> None:
    """No ptrace, no /proc/<pid>/mem or environ for an unprivileged same-user process (PR_SET_DUMPABLE 0):
    a candidate in the same box cannot reach into the zygote that forks the next worker. Forked workers
    inherit it until they exec."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


# --- the pool's side ----------------------------------------------------------------------------------


_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class ZygoteClient:
    """Starts the zygote (in `box` when given), asks it for workers and tracks how they ended.

    Process ids here are as this process sees them; the zygote's own (namespace) ids are translated through
    the id the kernel attaches to each worker's announcement.
    """

    def __init__(
        self, env: dict[str, str], pool_dir: Path, reply_timeout: float, box: Box | None = None
    ) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self._sock = ours
        self._reply_timeout = reply_timeout
        self.box_dir = pool_dir
        command = [
            sys.executable,
            "-m",
            "evaluators.zygote",
            f"--socket-fd={theirs.fileno()}",
            f"--parent-pid={1 if box is not None else os.getpid()}",
            *(["--boxed"] if box is not None else []),
        ]
        where: dict[str, Any] = {"stdin": subprocess.DEVNULL, "pass_fds": (theirs.fileno(),), "cwd": pool_dir}
        with open(pool_dir / "zygote.log", "ab") as log:
            self.started = Started(command, box=box, stdout=log, stderr=log, env=env, **where)
        self.proc = self.started.popen
        self.boxed: BoxedProcess | None = self.started.boxed
        theirs.close()
        self._replies: queue.Queue[int | None] = queue.Queue()
        self._exits: dict[int, int] = {}
        self._host_pid: dict[int, int] = {}  # the zygote's id of a worker -> ours
        self.live: set[int] = set()  # workers spawned whose end has not been reported
        self._cond = threading.Condition()
        self.dead = False
        self._reader = threading.Thread(target=self._read, name="kb-zygote-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            sender: int | None = None
            try:
                data, ancillary, _, _ = self._sock.recvmsg(MESSAGE_BYTES, socket.CMSG_SPACE(_UCRED.size))
                for level, kind, payload in ancillary:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                        sender = _UCRED.unpack(payload[: _UCRED.size])[0]
            except OSError:
                data = b""
            if not data:
                with self._cond:
                    self.dead = True
                    self._cond.notify_all()
                self._replies.put(None)
                return
            message = json.loads(data)
            if "pid" in message and sender:
                with self._cond:
                    self._host_pid[int(message["pid"])] = sender
                    self.live.add(sender)
                self._replies.put(sender)
            elif "exit" in message:
                with self._cond:
                    pid = self._host_pid.pop(int(message["exit"]), int(message["exit"]))
                    self._exits[pid] = int(message["status"])
                    self.live.discard(pid)
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

    @property
    def idle(self) -> bool:
        """Alive, with every worker it forked ended and reported (a boxed zygote serves one at a time)."""
        with self._cond:
            return not self.dead and not self.live

    def close(self) -> None:
        self.started.stop()  # its group (boxed: the namespace and everything inside)
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._reader.join(timeout=5)


if __name__ == "__main__":
    worker.run_guarded(main)
