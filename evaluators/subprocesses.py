"""Starting a command and ending it: the one place that launches a process with a time limit and kills it.

Every command kernelbot starts runs in a session of its own, so that killing its process group reaches what
it started too. A command in an OS box (evaluators.sandbox) is led by bwrap: killing bwrap's group and the
namespace's PID 1 takes everything inside with it (`BoxedProcess`). A command built by
`sandbox.boxed_argv` is an ordinary argv here: bwrap leads its group like any other command.

    run / run_async  start a command, wait for it up to a time limit, kill its whole group past it, and
                     return a `Finished` (exit code, output, whether it timed out) rather than raising
    Started          a long-lived command (a worker, a zygote, a trial server): one handle to poll, wait,
                     kill and reap it, boxed or not
    kill_group       SIGKILL a process group (the zygote's forked workers)

The time limit is a result, not an exception: a caller says what a timeout means for it (an error, a skip,
a record) from `Finished.timed_out`. A failure to start (no such executable) is the OSError Popen raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

# After a kill, how long the output pipes may stay open: a process that left the group (setsid) and kept
# them would otherwise hold the caller forever.
_DRAIN_S = 5.0
_REAP_S = 10.0


class _Box(Protocol):
    """What BoxedProcess needs of evaluators.sandbox.Box (imported there; this module sits below it)."""

    def command(
        self, argv: Sequence[str], *, bwrap: str | None = None, info_fd: int | None = None
    ) -> list[str]: ...


@dataclass(frozen=True)
class Finished:
    """How a command run to completion (or to its time limit) ended.

    returncode  its exit code (-N for signal N, as Popen says), None when it was killed at the time limit
    stdout      what it wrote (text, undecodable bytes replaced); "" when not captured
    stderr      the same for stderr; "" when merged into stdout or not captured
    timed_out   it ran past the time limit and its whole process group was killed
    """

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 3) -> str:
        """The last lines of stderr (else stdout), joined on one line, for a one-line reason."""
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return " | ".join(line.strip() for line in text[-lines:]) if text else "(no output)"


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid` (a command started in a session of its own: bwrap and its
    namespace, or an unboxed command and its children). Gone already is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def exit_status(returncode: int | None) -> int | None:
    """bwrap reports a command killed by signal N as exit code 128 + N; give it back as -N (Popen's way)."""
    if returncode is not None and 128 < returncode < 128 + 65:
        return -(returncode - 128)
    return returncode


class BoxedProcess:
    """A command started in a box: the Popen of bwrap plus the host pid of the namespace's PID 1.

    The kernel tears a PID namespace down (kills and reaps everything in it) before its PID 1 finishes
    exiting, so once that process is gone nothing started inside is left: `wait_empty` waits for that.
    """

    def __init__(self, box: _Box, argv: Sequence[str], **popen: Any) -> None:
        info_r, info_w = os.pipe()
        pass_fds = (*tuple(popen.pop("pass_fds", ())), info_w)
        popen.setdefault("start_new_session", True)  # killpg(pid) reaches bwrap and its PID 1
        popen.setdefault("env", {})  # bwrap itself needs nothing; the box's own variables are --setenv
        try:
            self.popen: subprocess.Popen[Any] = subprocess.Popen(
                box.command(argv, info_fd=info_w), pass_fds=pass_fds, **popen
            )
        except BaseException:
            os.close(info_r)
            raise
        finally:
            os.close(info_w)
        self.pid = self.popen.pid
        self.init_pid = _read_child_pid(info_r)
        self._init_fd = _pidfd(self.init_pid)

    def kill(self) -> None:
        """SIGKILL bwrap's group and the namespace's PID 1 (which takes everything inside with it)."""
        kill_group(self.pid)
        if self.init_pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.init_pid, signal.SIGKILL)

    def wait_empty(self, timeout: float = _REAP_S) -> bool:
        """Wait until the namespace holds no process; False if it still does after `timeout` seconds."""
        if self._init_fd is None:
            return True
        ready, _, _ = select.select([self._init_fd], [], [], timeout)
        if ready:
            self.close()
        return bool(ready)

    def close(self) -> None:
        if self._init_fd is not None:
            os.close(self._init_fd)
            self._init_fd = None


def _read_child_pid(fd: int) -> int | None:
    """bwrap's --info-fd JSON ({"child-pid": N, ...}); None when bwrap failed before writing it."""
    data = b""
    try:
        while chunk := os.read(fd, 4096):
            data += chunk
    finally:
        os.close(fd)
    try:
        return int(json.loads(data.decode() or "{}")["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


def _pidfd(pid: int | None) -> int | None:
    if pid is None or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:  # already gone
        return None


class Started:
    """A command started in a session of its own, in `box` when one is given; Popen keyword arguments pass
    through (stdin, stdout, stderr, env, cwd, pass_fds, text...), except that a boxed command's environment
    is the box's (`env` is ignored then). Exit codes read through it are Popen's (-N for signal N) whether
    or not bwrap stands between."""

    def __init__(self, argv: Sequence[str], *, box: _Box | None = None, **popen: Any) -> None:
        popen["start_new_session"] = True  # its group is what kill() ends
        if box is not None:  # bwrap itself needs no environment; the box's own variables are --setenv
            popen["env"] = {}
        self.boxed = BoxedProcess(box, argv, **popen) if box is not None else None
        self.popen: subprocess.Popen[Any] = (
            self.boxed.popen if self.boxed is not None else subprocess.Popen(list(argv), **popen)
        )
        self.pid = self.popen.pid

    def status(self, raw: int | None) -> int | None:
        """An exit status of bwrap or of the command, as Popen gives it for the command."""
        return exit_status(raw) if self.boxed is not None else raw

    def poll(self) -> int | None:
        return self.status(self.popen.poll())

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code once it ends; None when it is still running after `timeout` seconds."""
        try:
            return self.status(self.popen.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL its process group (and, boxed, the namespace's PID 1); safe to repeat. Nothing is reaped
        here: an exited leader keeps its pid (the group's id) until reap(), so the kill cannot reach a
        process that took the number over."""
        kill_group(self.pid)
        if self.boxed is not None:
            self.boxed.kill()

    def reap(self, timeout: float = _REAP_S) -> None:
        """Wait for it (up to `timeout`), and, boxed, until nothing it started inside is left."""
        self.wait(timeout)
        if self.boxed is not None:
            self.boxed.wait_empty(timeout=timeout)
            self.boxed.close()

    def stop(self, grace: Sequence[tuple[int, float]] = ()) -> None:
        """End it and reap it: nothing it started is left running. `grace`: signals to send its group first,
        each with the seconds to wait for the end (e.g. ((SIGINT, 15),): a search closes its pool on Ctrl-C);
        SIGKILL comes last."""
        for sig, wait_s in grace:
            if self.popen.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
            self.wait(wait_s)
        self.kill()
        self.reap()

    def communicate(self, input: str | bytes | None, timeout_s: float | None) -> tuple[Any, Any, bool]:
        """(stdout, stderr, timed_out): wait for the end, feeding `input`; past `timeout_s` kill the group and
        keep what it wrote until then. Ctrl-C (or any other exception) kills it before propagating."""
        try:
            out, err = self.popen.communicate(input, timeout=timeout_s)
            return out, err, False
        except subprocess.TimeoutExpired:
            self.kill()
            try:
                out, err = self.popen.communicate(timeout=_DRAIN_S)
            except subprocess.TimeoutExpired as still:  # a process outside the group holds a pipe open
                out, err = _text(still.stdout, self.popen), _text(still.stderr, self.popen)
                _close_pipes(self.popen)
            return out, err, True
        except BaseException:
            self.kill()
            self.popen.wait()
            raise


def _text(data: bytes | str | None, popen: subprocess.Popen[Any]) -> str | bytes:
    """TimeoutExpired keeps raw bytes even for a text-mode Popen: decode them the way the Popen would."""
    text_mode = getattr(popen, "text_mode", False)  # set by Popen, missing from its type stubs
    if data is None:
        return "" if text_mode else b""
    if isinstance(data, bytes) and text_mode:
        return data.decode(errors="replace")
    return data


def _close_pipes(popen: subprocess.Popen[Any]) -> None:
    for pipe in (popen.stdin, popen.stdout, popen.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def run(
    argv: Sequence[str],
    *,
    timeout_s: float | None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    box: _Box | None = None,
    merge_stderr: bool = False,
    stdout: int | IO[Any] | None = subprocess.PIPE,
    stderr: int | IO[Any] | None = subprocess.PIPE,
) -> Finished:
    """Run `argv` to its end or to `timeout_s` (None: no limit), in `box` when given; output as text.

    `merge_stderr`: stderr goes into stdout (one log in the order written). `stdout`/`stderr` may name a file
    instead of capturing; what is not captured is "" in the result. The whole group is killed at the time
    limit, and on Ctrl-C. Raises OSError when the command cannot start.
    """
    started = Started(
        argv,
        box=box,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.STDOUT if merge_stderr else stderr,
        text=True,
        errors="replace",
    )
    try:
        out, err, timed_out = started.communicate(input, timeout_s)
    finally:
        started.reap()
    code = None if timed_out else started.status(started.popen.returncode)
    return Finished(tuple(argv), code, out or "", err or "", timed_out)


async def run_async(
    argv: Sequence[str],
    *,
    timeout_s: float | None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    capture_stdout: bool = True,
) -> Finished:
    """`run` for an event loop (the search's writers): the loop is never blocked, and a cancelled caller
    (a search being stopped) kills the command's group before the cancellation goes on."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE if capture_stdout else asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    reads = asyncio.gather(_read(process.stdout), _read(process.stderr), _feed(process.stdin, input))
    timed_out = False
    try:
        await asyncio.wait_for(process.wait(), timeout=timeout_s)
    except asyncio.TimeoutError:
        timed_out = True
        kill_group(process.pid)
        await process.wait()
    except BaseException:  # cancelled: leave nothing running behind
        kill_group(process.pid)
        reads.cancel()
        with contextlib.suppress(BaseException):
            await process.wait()
        raise
    try:
        out, err, _ = await asyncio.wait_for(reads, timeout=_DRAIN_S if timed_out else None)
    except asyncio.TimeoutError:  # a process outside the group holds a pipe open
        out, err = b"", b""
    return Finished(
        tuple(argv),
        None if timed_out else process.returncode,
        out.decode(errors="replace"),
        err.decode(errors="replace"),
        timed_out,
    )


async def _read(stream: asyncio.StreamReader | None) -> bytes:
    return await stream.read() if stream is not None else b""


async def _feed(stream: asyncio.StreamWriter | None, text: str | None) -> None:
    if stream is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if text is not None:
            stream.write(text.encode())
            await stream.drain()
        stream.close()
