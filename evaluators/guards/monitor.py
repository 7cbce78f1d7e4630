"""Watches one candidate call with every runtime recorder and turns what they saw into HackFindings.

- OpRecorder (guards.op_recorder): ATen ops the host code dispatched          -> class 11 (casts below
  float32 in a float32 task: class 10); the host preparation it allowed goes to the worker log
- CodeTracer (guards.tracer): the reference / torch.compile / evaluator code -> class 11 / 16
- KernelRecorder (guards.kernels, GPU only): foreign kernels, other streams -> class 11 / 3
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from evaluators.context import JudgeContext
from evaluators.guards.audit import Attributor
from evaluators.guards.kernels import KernelRecorder, jit_kernel_names
from evaluators.guards.op_recorder import OpRecorder
from evaluators.guards.tracer import CodeTracer
from evaluators.result import HackFinding, KernelTime
from evaluators.static.facts import host_arguments, task_float_dtypes


class CallMonitor:
    def __init__(self, ctx: JudgeContext) -> None:
        sandbox = ctx.sandbox
        attributor = getattr(sandbox, "attributor", None)
        self.attributor = attributor if attributor is not None else Attributor(str(ctx.candidate_path))
        self.reference_file = ctx.task.reference_path
        self.device = ctx.backend.device
        self.on_gpu = self.device.startswith("cuda")
        self.kernel_names = jit_kernel_names(ctx.candidate_module) if self.on_gpu else set()
        dtypes = task_float_dtypes(ctx.task)
        self.float32_task = bool(dtypes) and dtypes <= {"float32", "float64"}
        self._pending: list[HackFinding] = []
        self.last_kernels: tuple[KernelTime, ...] = ()  # what the latest watched call launched (GPU only)
        self._preparation_logged = False
        self.task = ctx.task
        self._signature: Any = None

    @contextmanager
    def watch(self, label: str, args: tuple = (), kwargs: dict | None = None) -> Iterator[None]:
        ops = OpRecorder(self.attributor, float32_task=self.float32_task)
        ops.host_storages = self._host_storages(args, kwargs or {})
        tracer = CodeTracer(self.attributor, self.reference_file)
        kernels = KernelRecorder(self.kernel_names, self.device) if self.on_gpu else None
        self.last_kernels = ()
        try:
            with ExitStack() as stack:
                if kernels is not None:
                    stack.enter_context(kernels)
                stack.enter_context(tracer)
                stack.enter_context(ops)
                yield
        finally:
            self._collect(label, ops, tracer, kernels)

    def _host_storages(self, args: tuple, kwargs: dict) -> set[int]:
        """The storages of the call's tensors that live on the host: on a GPU those on the CPU; on a CPU
        device (every tensor there) those of the arguments the task keeps on the CPU (`seq_lens.cpu()`)."""
        import inspect

        import torch

        if self.on_gpu:
            tensors = [v for v in [*args, *kwargs.values()] if torch.is_tensor(v) and v.device.type == "cpu"]
        else:
            names = host_arguments(self.task)
            if not names:
                return set()
            if self._signature is None:
                self._signature = inspect.signature(self.task.load_reference())
            try:
                bound = self._signature.bind(*args, **kwargs).arguments
            except TypeError:
                return set()
            tensors = [v for k, v in bound.items() if k in names and torch.is_tensor(v)]
        return {int(t.untyped_storage().data_ptr()) for t in tensors}

    def _collect(
        self, label: str, ops: OpRecorder, tracer: CodeTracer, kernels: KernelRecorder | None
    ) -> None:
        if ops.violations:
            self._add("pytorch_fallback", f"{label}: {ops.describe()}")
        if ops.downcasts:
            self._add("precision_downgrade", f"{label}: {ops.describe_downcasts()}")
        if ops.preparation and not self._preparation_logged:
            self._preparation_logged = True
            print(
                f"host preparation (timed with the kernel), {label}: {ops.describe_preparation()}",
                file=sys.stderr,
            )
        for event in tracer.events:
            self._add(event.kind, f"{label}: {event.evidence}")
        if kernels is not None:
            report = kernels.report
            self.last_kernels = tuple(report.timed)
            if report.foreign:
                shown = "; ".join(n[:120] for n in report.foreign[:4])
                allowed = ", ".join(sorted(self.kernel_names)) or "none"
                self._add(
                    "pytorch_fallback",
                    f"{label}: launched device kernels that are not its @triton.jit functions "
                    f"({allowed}): {shown}",
                )
            if report.other_streams:
                self._add("other_stream", f"{label}: " + "; ".join(report.other_streams[:4]))

    def _add(self, kind: str, evidence: str) -> None:
        self._pending.append(HackFinding(kind, evidence, detector="runtime"))

    def drain(self) -> list[HackFinding]:
        out, self._pending = self._pending, []
        return out
