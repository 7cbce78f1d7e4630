"""The graph regime: N calls of one implementation captured in one CUDA graph and replayed; the GPU time of a
replay between two CUDA events, divided by N, is the time per call. This is how the code runs inside SGLang's
captured decode graphs, where host launch overhead does not exist.

N is chosen so that one replay lasts about `replay_target_us` (event resolution is ~0.5 µs, so a 1 µs kernel
needs a few hundred calls per replay to be measured to a fraction of a percent). Cold-cache tasks capture one
call per graph and flush the L2 before each replay, outside the event pair.

The CUDA entry points are bound when this module is imported (in the worker, before any candidate code is),
so a candidate that patches torch.cuda.Event or CUDAGraph.replay afterwards does not change what we measure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from evaluators.timing.inputs import InputSet

_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_synchronize = torch.cuda.Event.synchronize
_event_elapsed_ms = torch.cuda.Event.elapsed_time
_CUDAGraph = torch.cuda.CUDAGraph
_graph_replay = torch.cuda.CUDAGraph.replay
_Stream = torch.cuda.Stream
_stream_context = torch.cuda.stream
_current_stream = torch.cuda.current_stream
device_synchronize = torch.cuda.synchronize
_spin_kernel = getattr(torch.cuda, "_sleep", None)

MAX_GRAPH_CALLS = 1000
# A busy-wait kernel enqueued just before the start event keeps the GPU occupied while the host submits the
# event, the graph launch and the end event, so the host's submission latency (several µs, and variable)
# never lands between the two events: they bracket GPU execution only. ~40 µs at the H200's 1.98 GHz.
SPIN_SECONDS = 40e-6
_spin_cycles: dict[int, int] = {}


def _spin() -> None:
    if _spin_kernel is None:
        return
    device = torch.cuda.current_device()
    cycles = _spin_cycles.get(device)
    if cycles is None:
        clock_khz = getattr(torch.cuda.get_device_properties(device), "clock_rate", 0) or 2_000_000
        cycles = _spin_cycles[device] = int(clock_khz * 1e3 * SPIN_SECONDS)
    _spin_kernel(cycles)


SIDE_STREAM_WARMUP_CALLS = 2
CALIBRATION_CALLS = 4  # calls in the first, calibrating capture of a hot-cache case


def calls_per_replay(replay_target_us: float, per_call_us: float, max_calls: int) -> int:
    """Calls per graph so a replay lasts ~replay_target_us, rounded to a power of two: calibration noise
    then rarely changes N between processes, and with it the share of the replay's fixed launch cost."""
    wanted = replay_target_us / max(per_call_us, 1e-3)
    calls = 2 ** round(math.log2(max(wanted, 1.0)))
    return int(max(1, min(max_calls, calls)))


def warm_up_capture() -> None:
    """Capture and replay one trivial graph, so a worker's first real capture does not pay CUDA's one-time
    graph set-up inside a timed evaluation."""
    x = torch.zeros(16, device="cuda")
    stream = _Stream()
    stream.wait_stream(_current_stream())
    graph = _CUDAGraph()
    with _stream_context(stream):
        graph.capture_begin()
        x.add_(1.0)
        graph.capture_end()
    _current_stream().wait_stream(stream)
    _graph_replay(graph)
    _spin()
    device_synchronize()


class CaptureError(Exception):
    """The implementation cannot be captured in a CUDA graph (host sync, data-dependent shapes, ...)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


class GraphRunner:
    """Times one implementation in the graph regime on its own InputSet."""

    def __init__(
        self,
        fn: Callable[..., Any],
        inputs: InputSet,
        flush_l2: Callable[[], None] | None = None,
        max_calls: int = MAX_GRAPH_CALLS,
    ) -> None:
        self.fn = fn
        self.inputs = inputs
        self.flush_l2 = flush_l2
        self.max_calls = max(1, min(max_calls, MAX_GRAPH_CALLS))
        self._graph: Any = None
        self._returns: list[Any] = []
        self._capture_stream: Any = None
        self._start = _Event(enable_timing=True)
        self._end = _Event(enable_timing=True)

    @property
    def calls(self) -> int:
        return self.inputs.calls

    def prepare(self, replay_target_us: float) -> None:
        """Warm up off the capture stream, then capture as many calls as make one replay ~replay_target_us."""
        self._warm_side_stream()
        if self.flush_l2 is not None:  # cold cache: one call per replay, the flush goes before each replay
            self.capture(1)
            return
        # A few calls per replay already spread the graph's launch cost, so the first estimate of N is
        # usually final: one capture fewer per runner than starting from a single call.
        calls = min(CALIBRATION_CALLS, self.max_calls)
        self.capture(calls)
        for _ in range(3):  # a short replay still overestimates tiny kernels (graph launch cost): refine
            per_call = min(self.measure() for _ in range(3))
            new_calls = calls_per_replay(replay_target_us, per_call, self.max_calls)
            if new_calls == calls:
                return
            self.capture(new_calls)
            calls = new_calls

    def prepare_like(self, calls: int) -> None:
        """Warm up and capture `calls` calls: a second runner of a case takes the first one's calibration."""
        self._warm_side_stream()
        self.capture(calls)

    def _warm_side_stream(self) -> None:
        # Lazy initialisation (cuBLAS handles, Triton's first launch) must not happen during capture.
        side = _Stream()
        side.wait_stream(_current_stream())
        try:
            with _stream_context(side):
                for _ in range(SIDE_STREAM_WARMUP_CALLS):
                    self.inputs.restore()
                    args, kwargs = self.inputs.call(0)
                    self.fn(*args, **kwargs)
        finally:
            _current_stream().wait_stream(side)
            device_synchronize()

    def capture(self, calls: int) -> None:
        """Capture `calls` calls into a fresh graph (with its own private memory pool).

        torch.cuda.graph() is not used: it empties the allocator's cache on every capture, which costs
        milliseconds per capture and several captures per case; the capture itself is the same.
        """
        self._graph, self._returns = None, []
        self.inputs.resize(calls)
        self.inputs.restore()
        device_synchronize()
        if self._capture_stream is None:
            self._capture_stream = _Stream()
        stream = self._capture_stream
        stream.wait_stream(_current_stream())
        graph = _CUDAGraph()
        returns: list[Any] = []
        error: BaseException | None = None
        with _stream_context(stream):
            try:
                graph.capture_begin()
            except Exception as exc:
                raise CaptureError(_first_line(exc)) from exc
            try:
                for k in range(calls):
                    args, kwargs = self.inputs.call(k)
                    returns.append(self.fn(*args, **kwargs))
            except Exception as exc:
                error = exc
            finally:
                try:
                    graph.capture_end()  # must run even after an error, or the stream stays in capture mode
                except Exception as exc:
                    error = error or exc
        _current_stream().wait_stream(stream)
        if error is not None:
            del graph, returns
            # A failed capture leaves the context usable; a dead context raises here instead.
            device_synchronize()
            raise CaptureError(_first_line(error)) from error
        self._graph, self._returns = graph, returns

    def measure(self, before: Callable[[], None] | None = None) -> float:
        """One replay; µs per call. `before` runs after the inputs are restored, before the flush."""
        if self._graph is None:
            raise RuntimeError("GraphRunner.measure before a successful capture")
        self.inputs.restore()
        if before is not None:
            before()
        if self.flush_l2 is not None:
            self.flush_l2()
        _spin()
        _event_record(self._start)
        _graph_replay(self._graph)
        _event_record(self._end)
        _event_synchronize(self._end)
        return _event_elapsed_ms(self._start, self._end) * 1000.0 / self.calls

    def last_return(self) -> Any:
        """What the last captured call returned (its memory holds the last replay's results)."""
        return self._returns[-1]

    def release(self) -> None:
        self._graph, self._returns = None, []


# Samples taken on one allocation before moving to the next. Switching every sample slowed a ~1 us kernel's
# replays by 13 % on the H200 (four graphs in turn instead of two); in blocks, one discarded replay per
# switch is all it costs.
ALTERNATE_EVERY = 8


class AlternatingGraphs:
    """One implementation's GraphRunners on separate allocations of its inputs, replayed in turn.

    Where a buffer lands in physical memory moves a kernel's time by a few tenths of a percent (DRAM
    channels, which L2 slice holds which line), and it lands somewhere else in every process: on the H200
    that was the larger part of the cross-process scatter of a ~7 us kernel's speedup. Alternating between
    allocations (in blocks of samples) averages it out within the evaluation. Each replay already starts after
    the other implementation's replay, so switching buffers does not change the cache state it meets.
    The first runner is the primary: the post-timing re-check measures and reads it.
    """

    def __init__(self, runners: list[GraphRunner], block: int = ALTERNATE_EVERY) -> None:
        if not runners:
            raise ValueError("AlternatingGraphs needs at least one runner")
        self.runners = runners
        self.block = max(1, block)
        self._measured = 0

    @property
    def primary(self) -> GraphRunner:
        return self.runners[0]

    @property
    def calls(self) -> int:
        return self.primary.calls

    def prepare(self, replay_target_us: float) -> None:
        self.primary.prepare(replay_target_us)
        for runner in self.runners[1:]:
            runner.prepare_like(self.primary.calls)

    def measure(self, before: Callable[[], None] | None = None) -> float:
        turn, within = divmod(self._measured, self.block)
        runner = self.runners[turn % len(self.runners)]
        if within == 0 and self._measured and len(self.runners) > 1:
            runner.measure()  # not kept: the first replay after a switch ran slower for a ~1 us kernel
        self._measured += 1
        return runner.measure(before)

    def measure_primary(self, before: Callable[[], None] | None = None) -> float:
        return self.primary.measure(before)

    def last_return(self) -> Any:
        return self.primary.last_return()

    def release(self) -> None:
        for runner in self.runners:
            runner.release()
