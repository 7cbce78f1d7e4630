"""The CUDA side of a fed wall sample (evaluators.timing.wall.FeedDevice): a busy-wait kernel and two events
on the current stream. The entry points are bound when this module is imported, in the worker before any
candidate code exists, so a candidate that patches torch.cuda afterwards does not change what is measured."""

from __future__ import annotations

import torch

_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_query = torch.cuda.Event.query
_event_elapsed_ms = torch.cuda.Event.elapsed_time
_sleep = getattr(torch.cuda, "_sleep", None)
_get_device_properties = torch.cuda.get_device_properties
_current_device = torch.cuda.current_device

_cycles_per_us: dict[int, float] = {}


def can_feed() -> bool:
    """Whether this torch build has the busy-wait kernel a fed sample needs."""
    return _sleep is not None


def _cycles(us: float) -> int:
    device = _current_device()
    rate = _cycles_per_us.get(device)
    if rate is None:
        clock_khz = getattr(_get_device_properties(device), "clock_rate", 0) or 2_000_000
        rate = _cycles_per_us[device] = clock_khz / 1e3
    return max(1, int(rate * us))


class CudaFeed:
    """One implementation's busy-wait and start/end events (each WallRunner has its own)."""

    def __init__(self) -> None:
        if _sleep is None:
            raise RuntimeError("this torch build has no torch.cuda._sleep")
        self._sleep = _sleep
        self._start = _Event(enable_timing=True)
        self._end = _Event(enable_timing=True)

    def open(self, feed_us: float) -> None:
        self._sleep(_cycles(feed_us))
        _event_record(self._start)

    def close(self) -> None:
        _event_record(self._end)

    def opened(self) -> bool:
        return bool(_event_query(self._start))

    def span_us(self) -> float:
        return float(_event_elapsed_ms(self._start, self._end)) * 1000.0
