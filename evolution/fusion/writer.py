"""What seed:fusion and fusion:variant share: one trace per task (in a subprocess), the generation (in a
worker thread), and the knob sets already proposed per task, so that no knob set is written twice.

The trace subprocess runs `python -m evolution.fusion.trace`: Dynamo and AOTAutograd change global torch state
and take seconds of CPU, so they stay out of the search process and off its event loop. It traces on the CPU
(the graph does not depend on the device; the search process keeps the GPU for the evaluator).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import tempfile
import threading
from pathlib import Path

from evaluators.sandbox import boxed_argv, kill_group, read_regular_file
from evaluators.task import Task
from evolution.fusion.generate import LINE_LENGTH, Generated, GenerationError, generate
from evolution.fusion.knobs import Knobs
from evolution.fusion.model import TraceReport

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the directory holding the evolution package
_STDERR_TAIL = 1500
_TASK_FILES = ("task.toml", "reference.py", "inputs.py")
SELECTING_OPS = ("aten.topk.default", "aten.sort.default", "aten.sort.stable", "aten.argsort.default")


def task_key(task: Task) -> str:
    """The task's identity for the caches: its directory and the text of the files the trace reads."""
    digest = hashlib.sha256(str(task.root.resolve()).encode())
    for name in _TASK_FILES:
        path = task.root / name
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()[:16]


class FusionWriter:
    def __init__(
        self, *, python: str | None = None, timeout_s: float = 600.0, line_length: int = LINE_LENGTH
    ) -> None:
        self.python = python or sys.executable
        self.timeout_s = timeout_s
        self.line_length = line_length  # the target engine's limit: no line written is longer
        self._reports: dict[str, TraceReport] = {}
        self._tracing: dict[str, asyncio.Lock] = {}
        self._proposed: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    # --- tracing ---------------------------------------------------------------------------------------

    async def report(self, task: Task) -> TraceReport:
        """The task's trace (once per task and process; an error is kept as the report's error)."""
        key = task_key(task)
        lock = self._tracing.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._reports:
                self._reports[key] = await self._trace(task)
            return self._reports[key]

    async def _trace(self, task: Task) -> TraceReport:
        with tempfile.TemporaryDirectory(prefix="kb-fusion-") as workdir:
            out = Path(workdir) / "trace.json"
            env = dict(os.environ)
            env.pop("TRITON_INTERPRET", None)  # the trace compiles nothing
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p
            )
            env["CUDA_VISIBLE_DEVICES"] = ""  # traced on the CPU: the GPU stays the evaluator's
            # The reference is the target repository's code: traced in an OS box (evaluators.sandbox) that
            # shows the task read-only and only this scratch folder writable.
            argv, env = boxed_argv(
                [self.python, "-m", "evolution.fusion.trace", str(task.root), "--out", str(out)],
                env,
                what="the fusion writer's trace",
                read_only=(task.root, _PACKAGE_ROOT, Path(self.python)),
                writable=(Path(workdir),),
                cwd=Path(workdir),
            )
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=workdir,
                env=env,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
            try:
                _, stderr = await asyncio.wait_for(process.communicate(), timeout=self.timeout_s)
            except asyncio.TimeoutError:
                kill_group(process.pid)
                await process.wait()
                return TraceReport(error=f"tracing the reference took longer than {self.timeout_s:.0f} s")
            except asyncio.CancelledError:
                kill_group(process.pid)
                await process.wait()
                raise
            data = read_regular_file(out)
            if process.returncode != 0 or data is None:
                tail = stderr.decode(errors="replace")[-_STDERR_TAIL:].strip()
                return TraceReport(error=f"the trace process failed (exit {process.returncode}): {tail}")
            return TraceReport.from_json(data.decode(errors="replace"))

    # --- writing ---------------------------------------------------------------------------------------

    async def write(self, task: Task, report: TraceReport, knobs: Knobs) -> Generated:
        """The candidate for `knobs` (raises GenerationError when the reference is not one it writes)."""
        return await asyncio.to_thread(
            generate, report, knobs, entry=task.entry, task_name=task.name, line_length=self.line_length
        )

    def claim(self, task: Task, knobs: Knobs) -> bool:
        """Record `knobs` as proposed for `task`; False when it already was."""
        with self._lock:
            proposed = self._proposed.setdefault(task_key(task), set())
            if knobs.key() in proposed:
                return False
            proposed.add(knobs.key())
            return True

    def uses_selection(self, report: TraceReport) -> bool:
        return any(n.target in SELECTING_OPS for g in report.graphs for n in g.nodes)


__all__ = ["FusionWriter", "GenerationError", "task_key"]
