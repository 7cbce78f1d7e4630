"""Running a command of the target repository in one of its work trees: in an OS sandbox (evaluators.sandbox:
the tree read-only, a private scratch and /tmp, no network, no secret in the environment), with a time limit
that kills the whole namespace, and the output kept for the log. Without a box, the command runs as a plain
process group with the secret-looking variables removed, once the user allowed it (--allow-unsandboxed)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from evaluators.sandbox import (
    SECRET_NAME,
    Box,
    box_env,
    gpu_devices,
    read_regular_file,
    require_box_or_consent,
)
from evaluators.subprocesses import run

__all__ = ["read_regular_file", "resolve_command", "run_captured", "tail", "worktree_env"]

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
    """This process's environment without its secrets (in a box: only the allow-list of sandbox.box_env) plus
    `extra`, with the work tree's source root first on PYTHONPATH (its code is what runs, not an installed
    copy) and no bytecode written into the tree."""
    if require_box_or_consent("the repository's tests").ok:
        env = box_env(extra)
    else:
        env = {k: v for k, v in os.environ.items() if not SECRET_NAME.search(k)}
        env.update({k: v for k, v in (extra or {}).items() if not SECRET_NAME.search(k)})
    code_root = str((worktree / source_root).resolve())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (code_root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_captured(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    *,
    tree: Path | None = None,
    writable: Sequence[Path] = (),
) -> tuple[int | None, str]:
    """Run `argv` to completion: (exit code, or None when killed at the time limit; stdout and stderr).

    In a box, `tree` (default: `cwd`) is shown read-only and `writable` writable; the command's HOME is a
    private scratch directory, removed afterwards, and the GPU devices are there when the machine has some.
    """
    boxed = require_box_or_consent("the repository's tests").ok
    with tempfile.TemporaryDirectory(prefix="kernelbot-verify-") as scratch:
        box: Box | None = None
        if boxed:
            box = Box(
                scratch=Path(scratch),
                read_only=(Path(tree or cwd).resolve(),),
                writable=tuple(Path(w).resolve() for w in writable),
                env=env,
                cwd=Path(cwd).resolve(),
                gpu=bool(gpu_devices()),
            )
        try:
            # A time limit kills the command's whole group (in a box: the namespace and all inside).
            done = run(
                argv, timeout_s=timeout_s, cwd=cwd, env=None if boxed else env, box=box, merge_stderr=True
            )
        except OSError as exc:
            return 127, f"cannot start {argv[0]}: {exc}"
    return done.returncode, done.stdout


def tail(text: str, limit: int = 600) -> str:
    """The end of `text` on one line (whitespace collapsed), for a one-line reason."""
    text = " ".join(text.split())
    return text if len(text) <= limit else "..." + text[-limit:]
