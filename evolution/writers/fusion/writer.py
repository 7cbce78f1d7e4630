"""What seed:fusion and fusion:variant share: one trace per task (in a subprocess), the generation (in a
worker thread), and the knob sets already proposed per task, so that no knob set is written twice.

The trace subprocess runs `python -m evolution.writers.fusion.trace` (started, boxed and timed by
evolution.writers.tracing.launch): Dynamo and AOTAutograd change global torch state and take seconds of CPU,
so they stay out of the search process and off its event loop. It traces on the CPU (the graph does not
depend on the device; the search process keeps the GPU for the evaluator).
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import tempfile
import threading
from pathlib import Path

from evaluators.task import Task
from evolution.source_work import in_source_thread
from evolution.writers.fusion.generate import LINE_LENGTH, Generated, GenerationError, generate
from evolution.writers.fusion.knobs import Knobs
from evolution.writers.fusion.model import TraceReport
from evolution.writers.tracing.launch import run_tracer

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
            done = await run_tracer(
                "evolution.writers.fusion.trace",
                task.root,
                Path(workdir),
                what="the fusion writer's trace",
                timeout_s=self.timeout_s,
                python=self.python,
                # Traced on the CPU (the GPU stays the evaluator's); the trace compiles nothing.
                env={"TRITON_INTERPRET": None, "CUDA_VISIBLE_DEVICES": ""},
            )
        if done.timed_out:
            return TraceReport(error=f"tracing the reference took longer than {self.timeout_s:.0f} s")
        if done.report is None:
            tail = done.stderr[-_STDERR_TAIL:].strip()
            return TraceReport(error=f"the trace process failed (exit {done.returncode}): {tail}")
        return TraceReport.from_json(done.report)

    def traced(self, task: Task) -> TraceReport | None:
        """The task's trace where this process already made it, else None: for a rewrite that runs in a
        worker thread and does not wait on a trace."""
        return self._reports.get(task_key(task))

    # --- writing ---------------------------------------------------------------------------------------

    async def write(self, task: Task, report: TraceReport, knobs: Knobs) -> Generated:
        """The candidate for `knobs` (raises GenerationError when the reference is not one it writes)."""
        return await in_source_thread(
            generate, report, knobs, entry=task.entry, task_name=task.name, line_length=self.line_length
        )

    def proposed(self, task: Task, knobs: Knobs) -> bool:
        """Whether `knobs` was already proposed for `task` (claimed by some move)."""
        with self._lock:
            return knobs.key() in self._proposed.get(task_key(task), set())

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
