"""The device kernels one candidate call launched, from torch.profiler (CUDA / ROCm / MACA builds only).

Every kernel must be one of the candidate's own @triton.jit functions (fills of fresh buffers, memsets and
the copy kernels of host preparation aside: `.contiguous()`, `.float()` run ATen's direct copy kernel, and the
op recorder has already judged which copy it was): an inductor `triton_poi_*` kernel, a cuBLAS gemm or an
`at::native` elementwise math kernel is PyTorch doing the work (class 11). Every kernel must also run on
the stream the harness called on: a marker kernel launched just before the call tells which stream that is
(class 3 otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from evaluators.result import KernelTime

_MARKER_HINT = "bitwise_not"  # the marker kernel: an op no candidate has a reason to launch
_FILL_HINTS = ("fill", "memset", "zero")
# ATen's copy kernels (contiguous / clone / copy_ / dtype casts); concatenation and gathers have other names.
# float32 -> bfloat16 / float16 casts run their own kernels (ATen's Copy.cu), seen on torch 2.11.
_COPY_HINTS = (
    "direct_copy_kernel_cuda",
    "float8_copy_kernel_cuda",
    "bfloat16_copy_kernel_cuda",
    "float16_copy_kernel_cuda",
)


@dataclass
class KernelReport:
    foreign: list[str] = field(default_factory=list)  # kernels that are not the candidate's
    other_streams: list[str] = field(default_factory=list)  # "name on stream 13 (harness stream 7)"
    launched: list[str] = field(default_factory=list)
    # The kernels after the marker (the call's, not the marker's own zero fill), with their GPU times.
    timed: list[KernelTime] = field(default_factory=list)


def jit_kernel_names(module: ModuleType) -> set[str]:
    """Names of the @triton.jit functions a candidate module defines (through autotune/heuristics)."""
    names: set[str] = set()
    for value in vars(module).values():
        fn: Any = value
        for _ in range(4):  # Autotuner -> Heuristics -> JITFunction
            if type(fn).__name__ in ("JITFunction", "InterpretedFunction"):
                inner = getattr(fn, "fn", None)
                names.add(getattr(inner, "__name__", "") or getattr(fn, "__name__", ""))
                break
            fn = getattr(fn, "fn", None)
            if fn is None:
                break
    names.discard("")
    return names


def _is_candidate_kernel(name: str, allowed: set[str]) -> bool:
    base = name.split("(", 1)[0].strip()
    return any(base == a or base.startswith(a + "_") for a in allowed)


class KernelRecorder:
    """Context manager around one candidate call; `report` is filled on exit."""

    def __init__(self, allowed: set[str], device: str) -> None:
        self.allowed = allowed
        self.device = device
        self.report = KernelReport()
        self._profiler: Any = None

    def __enter__(self) -> KernelRecorder:
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize(self.device)
        self._profiler = profile(activities=[ProfilerActivity.CUDA])
        self._profiler.__enter__()
        marker = torch.zeros(1, dtype=torch.int8, device=self.device)
        torch.bitwise_not(marker, out=marker)
        return self

    def __exit__(self, *exc: object) -> None:
        torch.cuda.synchronize(self.device)
        self._profiler.__exit__(None, None, None)
        self.report = analyse(self._profiler.events(), self.allowed)


def warm_up_profiler(device: str) -> None:
    """One throw-away profiling session: CUPTI's first initialisation costs a noticeable part of a second,
    which a warm worker should pay before a candidate arrives, not inside its correctness stage."""
    with KernelRecorder(set(), device):
        torch.empty(16, device=device).fill_(1.0)


def analyse(events: Any, allowed: set[str]) -> KernelReport:
    """Split the profiler's device events into the candidate's kernels, foreign kernels and other streams."""
    report = KernelReport()
    device_events = [e for e in events if "cuda" in str(getattr(e, "device_type", "")).lower()]
    marker_stream, marker_start = None, None
    for e in device_events:
        if _MARKER_HINT in e.name:
            marker_stream, marker_start = _stream(e), _start_us(e)
            break
    for e in device_events:
        name = e.name
        if _MARKER_HINT in name:
            continue
        report.launched.append(name)
        start = _start_us(e)
        if marker_start is None or start is None or start >= marker_start:
            report.timed.append(KernelTime(name, _duration_us(e)))
        lowered = name.lower()
        is_copy_or_fill = (
            lowered.startswith("memcpy")
            or any(h in lowered for h in _FILL_HINTS)
            or any(h in name for h in _COPY_HINTS)
        )
        if not is_copy_or_fill and not _is_candidate_kernel(name, allowed) and name not in report.foreign:
            report.foreign.append(name)
        stream = _stream(e)
        if marker_stream is not None and stream is not None and stream != marker_stream:
            report.other_streams.append(
                f"{name[:80]} on stream {stream} (the harness's stream is {marker_stream})"
            )
    return report


def _duration_us(event: Any) -> float:
    """A device event's GPU time: its interval on the device timeline (microseconds)."""
    interval = getattr(event, "time_range", None)
    try:
        return max(0.0, float(interval.elapsed_us())) if interval is not None else 0.0
    except (TypeError, ValueError, AttributeError):
        return 0.0


def _start_us(event: Any) -> float | None:
    interval = getattr(event, "time_range", None)
    start = getattr(interval, "start", None)
    return float(start) if isinstance(start, (int, float)) else None


def _stream(event: Any) -> int | None:
    value = getattr(event, "device_resource_id", None)
    if value is None:
        value = getattr(event, "thread", None)
    return int(value) if value is not None else None
