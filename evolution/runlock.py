"""One process drives a run: an exclusive flock on RUN/run.lock, held from open to close.

The kernel drops the lock when its holder dies (even by SIGKILL), so a crashed run can be resumed at once,
while a second live `kernelbot evolve` on the same directory is refused with the holder's pid. A run that
ends normally removes the file, so a finished run leaves no lock behind; a taker checks that the file it
locked is still the one at the path (a releaser may have removed it in between) and tries again if not.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from evolution.errors import RunStoreError

LOCK_FILE = "run.lock"


class RunLock:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise RunStoreError(
                    f"run {self.path.parent} is being driven by another kernelbot process (pid {holder}); "
                    "wait for it to finish or stop it first"
                ) from None
            if self._still_linked(fd):
                break
            os.close(fd)  # the previous holder removed this file after we opened it: take the new one
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)  # while still locked: no one can take a file about to vanish
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def _still_linked(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    @property
    def held(self) -> bool:
        return self._fd is not None
