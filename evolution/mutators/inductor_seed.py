"""The Inductor seed: a first candidate made from the Triton code torch.compile generates for the reference.

torch.compile runs in a subprocess (evolution.writers.inductor.capture): it takes seconds of CPU, changes
global torch/Inductor/Triton state, and must not block the search's event loop. The subprocess hands back
Inductor's output code; turning it into a standalone candidate (evolution.writers.inductor.render) happens
here. When Inductor falls back to an ATen op it cannot express in Triton (topk, sort...), the outcome's error
says so, naming the ops, and no candidate is written: a seed that computes with PyTorch would only be
rejected as a cheat (the fusion seed covers such references).

Why a seed fails decides how a run without any program ends (evolution.seeding): a construct the seed does
not cover or a reference that does not trace is reported as such; kernelbot's own failures (the capture
process crashed, output it misread, a converted candidate that does not hold together) are marked internal.
"""

from __future__ import annotations

import ast
import shutil
import sys
import tempfile
from pathlib import Path

from evaluators.subprocesses import run_async
from evolution.mutators.base import failed
from evolution.source_work import in_source_thread
from evolution.types import MutationOutcome, MutationRequest
from evolution.writers.inductor.kernels import InductorConversionError, InductorUnsupported
from evolution.writers.inductor.model import CaptureReport
from evolution.writers.inductor.render import render_candidate
from evolution.writers.tracing.launch import run_tracer

OPERATOR = "seed:inductor"
_STDERR_TAIL = 4000  # enough of a crashed capture's traceback for the crash report


class InductorSeedMutator:
    name = OPERATOR

    def __init__(self, *, device: str = "cpu", timeout_s: float = 900.0, python: str | None = None) -> None:
        self.device = device
        self.timeout_s = timeout_s
        self.python = python or sys.executable

    def can_seed(self) -> bool:
        return True

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        if request.parent is not None:
            return failed(OPERATOR, "the Inductor seed only writes first candidates (it takes no parent)")
        task = request.task
        with tempfile.TemporaryDirectory(prefix="kb-inductor-") as workdir:
            report, problem, crashed = await self._capture(str(task.root), Path(workdir))
        if report is None:
            return failed(OPERATOR, problem, internal=crashed)
        if report.error:
            return failed(OPERATOR, f"Inductor seed: {report.error}")
        try:
            source = await in_source_thread(render_candidate, report, task.name, task.entry)
        except InductorUnsupported as exc:
            return failed(OPERATOR, f"Inductor seed: {exc}")
        except InductorConversionError as exc:
            return failed(OPERATOR, f"Inductor seed: conversion bug: {exc}", internal=True)
        except Exception as exc:  # our bug, on a reference torch.compile handled: say where it broke
            return failed(
                OPERATOR, f"Inductor seed: {type(exc).__name__} while converting: {exc}", internal=True
            )
        return MutationOutcome(operator=OPERATOR, child_source=await _formatted(source))

    async def _capture(self, task_dir: str, workdir: Path) -> tuple[CaptureReport | None, str, bool]:
        """Run the capture subprocess; (report, "", False) or (None, why it failed, whether the failure is
        a crash of our code rather than a slow compile)."""
        done = await run_tracer(
            "evolution.writers.inductor.capture",
            Path(task_dir),
            workdir,
            what="the Inductor seed's capture",
            timeout_s=self.timeout_s,
            args=("--device", self.device),
            python=self.python,
            gpu=not self.device.startswith("cpu"),
            env={
                "TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor-cache"),
                "TRITON_CACHE_DIR": str(workdir / "triton-cache"),
                "TORCHINDUCTOR_COMPILE_THREADS": "1",  # code generation only: no compile worker pool
            },
        )
        if done.timed_out:
            return (
                None,
                f"Inductor seed: torch.compile took longer than {self.timeout_s:.0f} s and was stopped",
                False,
            )
        if done.report is None:
            tail = done.stderr[-_STDERR_TAIL:].strip()
            return (
                None,
                f"Inductor seed: the capture process failed (exit {done.returncode}): {tail}",
                True,
            )
        return CaptureReport.from_json(done.report), "", False


async def _formatted(source: str) -> str:
    """`source` laid out by ruff (long launch lines wrapped) when ruff is installed; else unchanged."""
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        return source
    argv = [ruff, "format", "--isolated", "--line-length", "110", "--stdin-filename", "candidate.py", "-"]
    try:  # --isolated: the user's ruff config (whatever the cwd) plays no part
        done = await run_async(argv, input=source, timeout_s=30)
    except OSError:
        return source
    text = done.stdout
    if done.returncode != 0 or not text.strip():
        return source
    try:
        ast.parse(text)
    except SyntaxError:
        return source
    return text
