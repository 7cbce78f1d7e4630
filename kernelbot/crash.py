"""Writes a crash report (traceback, versions, GPU) to a file and points the user at it."""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from pathlib import Path

from evaluators import secrets


def crash_dir() -> Path:
    return Path(os.environ.get("KERNELBOT_HOME", Path.home() / ".kernelbot")) / "crashes"


def _versions() -> list[str]:
    lines = [f"python {platform.python_version()} on {platform.platform()}"]
    for name in ("torch", "triton", "libcst"):
        module = sys.modules.get(name)
        if module is not None:
            lines.append(f"{name} {getattr(module, '__version__', '?')}")
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                lines.append(f"gpu {torch.cuda.get_device_name(0)}")
        except Exception:  # the report must not fail on a broken CUDA context
            lines.append("gpu <unreadable>")
    return lines


def report_crash(argv: list[str]) -> Path:
    directory = crash_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    body = [
        "kernelbot crashed. Please attach this file to a bug report.",
        f"command: {' '.join(argv)}",
        *_versions(),
        "",
        traceback.format_exc(),
    ]
    # The traceback may quote anything (an argument, a response, a candidate's output): secrets masked.
    path.write_text(secrets.redact("\n".join(body)))
    return path
