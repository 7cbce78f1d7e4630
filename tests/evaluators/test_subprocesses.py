"""evaluators.subprocesses: a time limit kills the command's whole process group (a grandchild too), the
output written before it is kept, and the result says it timed out; the same in a box and on an event loop."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluators import sandbox
from evaluators.subprocesses import Started, run, run_async

needs_box = pytest.mark.skipif(not sandbox.availability().ok, reason="no bubblewrap box on this machine")


def _grandchild_script(pid_file: Path) -> str:
    """A shell that starts a sleeping grandchild (recording its pid), says so, and waits on it."""
    return f"{sys.executable} -c 'import time; time.sleep(60)' & echo $! > {pid_file}; echo started; wait"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed grandchild re-parented to init may linger as a zombie for a moment: that is dead.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _gone_soon(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_output_and_exit_code_are_captured() -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    done = run([sys.executable, "-c", code], timeout_s=60)
    assert (done.returncode, done.stdout, done.stderr, done.timed_out) == (3, "out\n", "err\n", False)
    assert not done.ok and done.tail() == "err"
    code = "import sys; print('a', flush=True); print('b', file=sys.stderr)"
    merged = run([sys.executable, "-c", code], timeout_s=60, merge_stderr=True)
    assert merged.stdout == "a\nb\n" and merged.stderr == "" and merged.ok
    upper = [sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"]
    echoed = run(upper, timeout_s=60, input="x")
    assert echoed.stdout == "X\n"


def test_a_time_limit_kills_the_grandchild_and_keeps_the_output(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    started = time.monotonic()
    done = run(["/bin/sh", "-c", _grandchild_script(pid_file)], timeout_s=1.5)
    assert time.monotonic() - started < 10
    assert done.timed_out and done.returncode is None and not done.ok
    assert done.stdout == "started\n"
    assert _gone_soon(int(pid_file.read_text()))


def test_a_missing_executable_raises_oserror() -> None:
    with pytest.raises(OSError):
        run(["/nonexistent/kernelbot-no-such-tool"], timeout_s=5)


def test_stop_sends_the_grace_signal_first(tmp_path: Path) -> None:
    marker = tmp_path / "interrupted"
    script = (
        "import signal, sys, time\n"
        f"signal.signal(signal.SIGINT, lambda *_: (open({str(marker)!r}, 'w').close(), sys.exit(0)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    started = Started([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert started.popen.stdout is not None and started.popen.stdout.readline() == "ready\n"
    assert started.poll() is None
    started.stop(grace=((signal.SIGINT, 10.0),))
    assert marker.exists() and started.popen.returncode == 0


def test_the_event_loop_version_kills_on_timeout_and_on_cancel(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    done = asyncio.run(run_async(["/bin/sh", "-c", _grandchild_script(pid_file)], timeout_s=1.5))
    assert done.timed_out and done.returncode is None and done.stdout == "started\n"
    assert _gone_soon(int(pid_file.read_text()))

    pid_file.unlink()

    async def cancelled() -> None:
        task = asyncio.ensure_future(run_async(["/bin/sh", "-c", _grandchild_script(pid_file)], timeout_s=60))
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert _gone_soon(int(pid_file.read_text()))
    reverse = [sys.executable, "-c", "print(input()[::-1])"]
    echoed = asyncio.run(run_async(reverse, timeout_s=60, input="abc\n"))
    assert (echoed.returncode, echoed.stdout) == (0, "cba\n")


@needs_box
def test_a_boxed_command_is_killed_with_everything_inside(tmp_path: Path) -> None:
    marker, ready = tmp_path / "survived", tmp_path / "ready"
    # Inside, the grandchild leaves the group (setsid): only the namespace's end reaches it.
    script = (  # once it says so (ready), it outlives the shell by a second, unless the box's end takes it
        f"import os, time; os.setsid(); open({str(ready)!r}, 'w').close(); time.sleep(1); "
        f"open({str(marker)!r}, 'w').write('x')"
    )
    wait_ready = f"until [ -e {ready} ]; do sleep 0.05; done"
    shell = f"{sys.executable} -c {script!r} & {wait_ready}; echo started; sleep 60"
    box = sandbox.Box(scratch=tmp_path, writable=(tmp_path,))
    started = Started(["/bin/sh", "-c", shell], box=box, stdout=subprocess.PIPE, text=True)
    assert started.popen.stdout is not None and started.popen.stdout.readline() == "started\n"
    started.stop()
    assert started.poll() == -signal.SIGKILL
    time.sleep(1.5)
    assert not marker.exists()
    ended = run(["/bin/sh", "-c", "kill -TERM $$"], timeout_s=60, box=box)
    assert ended.returncode == -signal.SIGTERM  # bwrap's 128 + N, given back as Popen's -N
