"""One scan at a time per repository: an exclusive lock on STATE/scan.lock, held for the whole scan.

Two scans of one repository at once could both find a region unproposed and both run `target` on it, or
both refresh one PR. The lock is an flock(2) on the file, so the operating system releases it when the
scan's process ends, however it ends: a killed scan never leaves a stale lock behind. The holder writes
who it is (pid, host, start time) into the file, so the refusal can say what is running.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType
from typing import IO

from kernelbot.errors import RunStateError

LOCK_FILE = "scan.lock"


class ScanLocked(RunStateError):
    """Raised when another scan of the same repository holds the lock."""


class ScanLock:
    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        self._handle: IO[str] | None = None

    def __enter__(self) -> ScanLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _holder(handle.read())
            handle.close()
            raise ScanLocked(
                f"another kernelbot scan of {self.what} is running{holder} (lock {self.path}): wait for it "
                "to finish; two scans at once could propose the same region twice"
            ) from None
        handle.seek(0)
        handle.truncate()
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": started}))
        handle.flush()
        self._handle = handle
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._handle is not None:
            self._handle.truncate(0)
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def _holder(text: str) -> str:
    try:
        data = json.loads(text)
        return f" (pid {int(data['pid'])} on {data['host']}, started {data['started']})"
    except (ValueError, KeyError, TypeError):
        return ""
