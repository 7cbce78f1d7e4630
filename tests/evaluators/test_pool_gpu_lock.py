"""The per-device timing lock: exclusive across processes, released by the kernel when a holder dies."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluators.gpu_lock import GpuLock

HOLDER = """
import sys, time
from pathlib import Path
from evaluators.gpu_lock import GpuLock
lock = GpuLock(sys.argv[1], Path(sys.argv[2]))
lock.acquire()
print("held", flush=True)
time.sleep(float(sys.argv[3]))
"""


def _hold_in_subprocess(key: str, directory: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, key, str(directory), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_lock_is_exclusive_across_processes_and_freed_when_the_holder_is_killed(tmp_path: Path) -> None:
    holder = _hold_in_subprocess("gpu-test", tmp_path, 60)
    try:
        lock = GpuLock("gpu-test", tmp_path)
        assert not lock.acquire(timeout=0.3)  # another process holds it
        holder.kill()  # SIGKILL: no chance to unlock, the kernel drops the flock with the process
        holder.wait()
        assert lock.acquire(timeout=5.0)
        assert lock.held
        lock.release()
        assert not lock.held
    finally:
        holder.kill()
        holder.wait()


def test_waiting_for_a_released_lock_and_the_time_waited(tmp_path: Path) -> None:
    holder = _hold_in_subprocess("gpu-wait", tmp_path, 0.5)
    lock = GpuLock("gpu-wait", tmp_path)
    with lock.hold():
        assert lock.waited_s > 0.2
    holder.wait()


def test_different_devices_do_not_block_each_other_and_shared_holders_coexist(tmp_path: Path) -> None:
    a, b = GpuLock("gpu-a", tmp_path), GpuLock("gpu-b", tmp_path)
    with a, b:
        assert a.held and b.held
    s1, s2 = GpuLock("gpu-s", tmp_path), GpuLock("gpu-s", tmp_path)
    assert s1.acquire(shared=True, timeout=1) and s2.acquire(shared=True, timeout=1)
    assert not GpuLock("gpu-s", tmp_path).acquire(timeout=0.1)  # exclusive waits for readers
    s1.release()
    s2.release()


def test_lock_key_must_be_a_plain_file_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        GpuLock("../etc/passwd", tmp_path)


def test_lock_dir_can_be_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELBOT_LOCK_DIR", str(tmp_path / "locks"))
    lock = GpuLock("cuda0")
    start = time.monotonic()
    with lock:
        assert lock.path.parent == tmp_path / "locks"
    assert time.monotonic() - start < 5


def test_the_next_holder_learns_how_long_the_gpu_has_been_idle(tmp_path: Path) -> None:
    lock = GpuLock("gpu-idle", tmp_path)
    with lock.hold():
        assert lock.idle_s == float("inf")  # a fresh lock file: nobody timed on this GPU yet
    time.sleep(0.2)
    with lock.hold():
        assert 0.2 <= lock.idle_s < 5.0  # the release stamp of the previous holder
    with lock.hold():
        assert lock.idle_s < 0.2
    lock.path.write_bytes(b"\xff" * 8)  # garbage (a NaN stamp): treated as never released
    with lock.hold():
        assert lock.idle_s == float("inf")
    holder = _hold_in_subprocess("gpu-idle", tmp_path, 60)
    holder.kill()  # killed while holding: it never stamps, the previous release's stamp stays
    holder.wait()
    time.sleep(0.3)
    with lock.hold():
        assert lock.idle_s >= 0.3


def test_a_held_lock_switches_between_shared_and_exclusive(tmp_path: Path) -> None:
    """A run's own lock (TimingConfig.run_lock): shared holders coexist, and one switching to exclusive
    waits until the others have let go; switching back lets them in again and stamps the file."""
    import threading

    mine, other = GpuLock("run", tmp_path), GpuLock("run", tmp_path)
    mine.acquire(shared=True)
    assert other.acquire(shared=True, timeout=0)
    switched = threading.Event()

    def to_exclusive() -> None:
        mine.switch(shared=False)
        switched.set()

    thread = threading.Thread(target=to_exclusive)
    thread.start()
    assert not switched.wait(0.3)  # the other shared holder keeps it waiting
    other.release()
    assert switched.wait(5.0)
    thread.join()
    assert mine.waited_s > 0.2
    assert not other.acquire(shared=True, timeout=0)  # exclusive now
    mine.switch(shared=True)
    assert other.acquire(shared=True, timeout=0)
    assert other.idle_s < 5.0  # the switch back wrote the stamp
    other.release()
    mine.release()
    with pytest.raises(RuntimeError):
        mine.switch(shared=False)
