"""Running a command of the target repository in one of its work trees: the environment it gets, a time
limit that kills the whole process group, and the output kept for the log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

_PYTHONS = ("python", "python3")


def resolve_command(command: Sequence[str]) -> list[str]:
    """A bare `python` / `python3` at the start of a command means the interpreter running kernelbot (the
    environment where the target repository's dependencies were installed)."""
    argv = list(command)
    if argv and argv[0] in _PYTHONS:
        argv[0] = sys.executable
    return argv


def worktree_env(
    worktree: Path, source_root: str = "", extra: dict[str, str] | None = None
) -> dict[str, str]:
    """This process's environment plus `extra`, with the work tree's source root first on PYTHONPATH (its
    code is what runs, not an installed copy) and no bytecode written into the tree."""
    env = dict(os.environ)
    env.update(extra or {})
    code_root = str((worktree / source_root).resolve())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (code_root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_captured(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> tuple[int | None, str]:
    """Run `argv` to completion: (exit code, or None when killed at the time limit; stdout and stderr)."""
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,  # a time limit kills the command's own children too
        )
    except OSError as exc:
        return 127, f"cannot start {argv[0]}: {exc}"
    try:
        output, _ = process.communicate(timeout=timeout_s)
        return process.returncode, output
    except subprocess.TimeoutExpired:
        _kill_group(process)
        output, _ = process.communicate()
        return None, output
    except BaseException:  # Ctrl-C: leave nothing running behind
        _kill_group(process)
        process.wait()
        raise


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def tail(text: str, limit: int = 600) -> str:
    """The end of `text` on one line (whitespace collapsed), for a one-line reason."""
    text = " ".join(text.split())
    return text if len(text) <= limit else "..." + text[-limit:]
