"""A per-device lock that serialises the timing stage across every worker, pool and process on the machine.

It is an `fcntl.flock` on a file named after the device (its UUID when torch can tell it, so that two
processes with different CUDA_VISIBLE_DEVICES agree), under a lock directory shared by all users of the
machine. The kernel drops a flock when the file descriptor closes, which includes the holder being killed,
so a hung or crashed worker never leaves the GPU locked. Compile and correctness do not take it: they may
run beside the one worker that is timing. The holder writes the time it lets go into the file, so the next
one can tell whether the GPU was busy moments ago (its clocks up) or idle.

A run that holds the device lock for all of its processes (a confirmation timing several fresh processes at
once) gives its workers a lock of their own, named in TimingConfig.run_lock: each worker holds it shared for
everything it does on the GPU and switches it to exclusive while it samples, so a sample is never taken
while another of the run's processes uses the GPU, and their host work (inputs, compiles) still overlaps.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import struct
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_DIR_ENV = "KERNELBOT_LOCK_DIR"
_STAMP = struct.Struct("<d")  # the last release's time.time(), at the start of the lock file


def lock_dir() -> Path:
    """Where lock files live: $KERNELBOT_LOCK_DIR, else one world-writable directory under the temp dir."""
    configured = os.environ.get(LOCK_DIR_ENV)
    path = Path(configured) if configured else Path(tempfile.gettempdir()) / "kernelbot-gpu-locks"
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        if not configured:
            # Sticky and world-writable like /tmp, so runs of different users still share the lock.
            with contextlib.suppress(OSError):
                path.chmod(0o1777)
    return path


def device_key(device_index: int) -> str:
    """A stable name for a CUDA device: its UUID when available, else 'cuda<index>' (call in the worker)."""
    import torch

    try:
        uuid = getattr(torch.cuda.get_device_properties(device_index), "uuid", None)
    except Exception:  # a build without the property, or a device that cannot be queried
        uuid = None
    if uuid:
        return "gpu-" + re.sub(r"[^A-Za-z0-9-]", "", str(uuid))
    return f"cuda{device_index}"


class GpuLock:
    """Exclusive (or shared) flock on `<lock_dir>/<key>.lock`; usable as a context manager."""

    def __init__(self, key: str, directory: Path | None = None) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", key):
            raise ValueError(f"lock key {key!r} must be a plain file name")
        self.path = (directory or lock_dir()) / f"{key}.lock"
        self._fd: int | None = None
        self.waited_s = 0.0
        self.idle_s = float("inf")  # since the previous holder let go, as read on acquiring

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, *, shared: bool = False, timeout: float | None = None) -> bool:
        """Block until the lock is held (True), or until `timeout` seconds passed (False)."""
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already held by this GpuLock")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o666)  # another user's worker must be able to open it too
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        start = time.monotonic()
        try:
            if timeout is None:
                fcntl.flock(fd, mode)
            elif not _flock_with_timeout(fd, mode, timeout):
                os.close(fd)
                return False
        except BaseException:
            os.close(fd)
            raise
        self.waited_s = time.monotonic() - start
        self.idle_s = _idle_since_stamp(fd)
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            _stamp(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def switch(self, *, shared: bool) -> None:
        """Turn the held lock shared or exclusive, blocking until that is granted. Linux converts a flock
        by letting go first, so the switch is not atomic: whoever waits may come in between (a switch can
        never deadlock two shared holders that both want it exclusive). Leaving exclusive writes the stamp,
        as a release does; reaching it reads the stamp (waited_s, idle_s)."""
        if self._fd is None:
            raise RuntimeError(f"{self.path} is not held by this GpuLock")
        if shared:
            _stamp(self._fd)
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            return
        start = time.monotonic()
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.waited_s = time.monotonic() - start
        self.idle_s = _idle_since_stamp(self._fd)

    @contextlib.contextmanager
    def hold(self, *, shared: bool = False) -> Iterator[GpuLock]:
        self.acquire(shared=shared)
        try:
            yield self
        finally:
            self.release()

    def __enter__(self) -> GpuLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _stamp(fd: int) -> None:
    with contextlib.suppress(OSError):  # read-only lock file (another user's): no stamp, still a lock
        os.pwrite(fd, _STAMP.pack(time.time()), 0)


def _idle_since_stamp(fd: int) -> float:
    """Seconds since the lock file's stamp; infinite without one (a fresh file) or with garbage in it."""
    try:
        data = os.pread(fd, _STAMP.size, 0)
    except OSError:
        return float("inf")
    if len(data) != _STAMP.size:
        return float("inf")
    (stamp,) = _STAMP.unpack(data)
    idle = time.time() - stamp
    return idle if 0.0 <= idle < 1e9 else float("inf")


def _flock_with_timeout(fd: int, mode: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
