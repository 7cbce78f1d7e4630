"""The tracing subprocesses the writers start: `python -m MODULE TASK [ARGS] --out REPORT.json`, in an OS box.

Tracing imports torch, changes Dynamo's and Inductor's global state and takes seconds of CPU: it stays out of
the search process and off its event loop. The reference is the target repository's code, so the process
runs in a box (evaluators.sandbox) that shows the task, this checkout and the interpreter read-only and only
a scratch folder writable; the report is read back only if it is a regular file there. The time limit and
the kill (the whole box) are evaluators.subprocesses'.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, Protocol

from evaluators.sandbox import boxed_argv, read_regular_file
from evaluators.subprocesses import run_async

PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the directory holding the evolution package
REPORT = "report.json"


@dataclass(frozen=True)
class TracerRun:
    """How one tracing process ended: the report it wrote (JSON text), or why there is none.

    report      the report's text; None when the process timed out, failed or wrote none
    returncode  its exit code (None when it was killed at the time limit)
    stderr      what it wrote to stderr (a crashed tracer's traceback)
    timed_out   it ran past the time limit and was killed with everything it started
    """

    report: str | None
    returncode: int | None
    stderr: str
    timed_out: bool


async def run_tracer(
    module: str,
    task_dir: Path,
    workdir: Path,
    *,
    what: str,
    timeout_s: float,
    args: Sequence[str] = (),
    env: Mapping[str, str | None] | None = None,
    python: str | None = None,
    gpu: bool = False,
    writable: Sequence[Path] = (),
) -> TracerRun:
    """Run `python -m module task_dir *args --out workdir/report.json` in a box (this checkout importable,
    `env` laid over this process's environment: None removes a variable; `writable` shown writable beside
    the workdir) and read the report back."""
    python = python or sys.executable
    out = workdir / REPORT
    merged = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    # The subprocess runs in a scratch directory: make this checkout importable even when not installed.
    merged["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), merged.get("PYTHONPATH", "")) if p)
    argv, boxed_env = boxed_argv(
        [python, "-m", module, str(task_dir), *args, "--out", str(out)],
        merged,
        what=what,
        read_only=(Path(task_dir), PACKAGE_ROOT, Path(python)),
        writable=(workdir, *writable),
        cwd=workdir,
        gpu=gpu,
    )
    done = await run_async(argv, cwd=workdir, env=boxed_env, timeout_s=timeout_s, capture_stdout=False)
    data = None if done.timed_out else read_regular_file(out)
    report = data.decode(errors="replace") if data is not None and done.returncode == 0 else None
    return TracerRun(report, done.returncode, done.stderr, done.timed_out)


class _Report(Protocol):
    def to_json(self) -> str: ...


def report_main(
    description: str,
    build: Callable[..., _Report],
    argv: Sequence[str] | None = None,
    *,
    device: str = "cpu",
    options: Mapping[str, str] | None = None,
) -> int:
    """The command line of a tracing subprocess, `TASK [--device D] --out REPORT.json`: writes
    `build(task, device, **more)` as JSON, where `options` maps each further string option (`--case`) to
    the keyword that passes it on (`case_name`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("task")
    parser.add_argument("--device", default=device)
    parser.add_argument("--out", required=True)
    for flag in options or {}:
        parser.add_argument(flag, default=None)
    parsed = vars(parser.parse_args(argv))
    more = {keyword: parsed[flag.lstrip("-").replace("-", "_")] for flag, keyword in (options or {}).items()}
    Path(parsed["out"]).write_text(build(parsed["task"], parsed["device"], **more).to_json())
    return 0


def end_traced_process(code: int) -> NoReturn:
    """The end of a tracing subprocess's `__main__`, once its report is written: the writer waits for the
    process to end, so it leaves without the interpreter's teardown of torch, Dynamo and Inductor (seconds,
    once per trace). An exception before this leaves the usual way, with its traceback."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
