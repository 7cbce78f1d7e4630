"""The scan lock: a real flock, refused while held (here or in another process), free once its holder
is gone however it ended."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelbot.scan.lock import ScanLock, ScanLocked

HOLD = """
import sys, time
from pathlib import Path
from kernelbot.scan.lock import ScanLock
with ScanLock(Path(sys.argv[1]), "upstream/engine"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_second_scan_is_refused_and_told_who_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "scan.lock"
    with ScanLock(path, "upstream/engine"):
        with pytest.raises(ScanLocked) as refused, ScanLock(path, "upstream/engine"):
            pass
        message = str(refused.value)
        assert "another kernelbot scan of upstream/engine is running" in message and "pid" in message
        assert str(path) in message
    with ScanLock(path, "upstream/engine"):  # released on exit
        pass


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    path = tmp_path / "scan.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(ScanLocked, match=f"pid {holder.pid}"), ScanLock(path, "upstream/engine"):
            pass
    finally:
        holder.kill()
        holder.wait(timeout=30)
    deadline = time.monotonic() + 10
    while True:
        try:
            with ScanLock(path, "upstream/engine"):
                break
        except ScanLocked:
            assert time.monotonic() < deadline, "the lock outlived its killed holder"
            time.sleep(0.1)
