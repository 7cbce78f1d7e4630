"""The wall regime: what a call costs when it runs eagerly (before a graph replay, in a scheduler), where the
host's Python and launch overhead counts as much as the kernels.

A sample is `calls` back-to-back calls. On a CUDA device it is taken **fed**: after a device sync (the
previous sample and the input restore are done), a busy-wait kernel is queued that outlasts the host's work
for the sample, then a start event, the calls, an end event. The host clock runs from just before the first
call to the return of the last one, and never includes waiting for the GPU, unless the code itself
synchronises. The events give the GPU's time for the calls, back to back behind the busy-wait (no launch gaps,
no first-launch latency). The sample is the larger of the two, per call: a stream of eager calls costs
whichever of the host and the GPU is slower, and sync jitter at either end of a sample counts in neither.
On the H200 (2026-12-01, a probe outside the evaluator: a 100 Mi fp32 copy against a multiply by one, 6 fresh
processes), fed samples gave a speedup CV of 0.014 % and a time CV of 0.04 %; sync to sync, 0.12 % and ~1 %.
On a ~10 us launch-bound pair both ways scattered ~0.5-1.4 % from process to process.

Code that synchronises (a `.item()`, a host copy) would wait for the busy-wait too; it is recognised in
warm-up (its busy-wait runs out before its calls return, every time, however long the busy-wait grows) and
that implementation is then timed **sync to sync**: device sync, host clock, calls, device sync, host clock,
as every sample on a device without events (the CPU backends) is.

The number of calls per sample is chosen per implementation (wall_calls_for); cold-cache tasks time one call
per sample with the L2 flush before it. The clocks and CUDA entry points are bound at import, before any
candidate code runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from evaluators.timing.inputs import InputSet

_perf_counter_ns = time.perf_counter_ns

# The busy-wait ahead of a fed sample: FEED_FACTOR times the host time of the implementation's last sample,
# plus FEED_MARGIN_US, within [FEED_MIN_US, FEED_MAX_US]. Before any fed sample a sync-to-sync one sizes it.
# A busy-wait that runs out early leaves the sample valid (the GPU then idles, and the host time is the
# larger); only the busy-wait's excess is lost time: on the H200, a ~10 us launch-bound call took 470-690
# pairs in 0.3 s with 1.25x, 320 with a fixed 400 us (2026-12-01 probe, outside the evaluator).
FEED_FACTOR = 1.25
FEED_MARGIN_US = 20.0
FEED_MIN_US = 20.0
FEED_MAX_US = 20_000.0
# A first (sync-to-sync) sample longer than this stays the way every sample of the implementation is taken:
# the jitter at its two ends is under ~0.2 % of it, and a busy-wait as long as its host work would halve the
# samples the cap allows.
SYNC_ENOUGH_US = 5000.0
# An implementation whose busy-wait ran out before its calls returned on this many warm-up samples in a row
# (the busy-wait doubling each time) waits for the GPU itself: it is timed sync to sync.
STARVED_SAMPLES_TO_SYNC = 3


class FeedDevice(Protocol):
    """What a fed sample needs from the device (evaluators.timing.cuda_feed.CudaFeed on CUDA)."""

    def open(self, feed_us: float) -> None:
        """Queue ~feed_us of GPU busy-wait, then the start marker."""

    def close(self) -> None:
        """Queue the end marker."""

    def opened(self) -> bool:
        """Whether the GPU has already passed the start marker (the busy-wait ran out)."""

    def span_us(self) -> float:
        """GPU time between the start and end markers (call after a device sync)."""


def wall_calls_for(estimate_us: float | None, target_us: float, max_calls: int) -> int:
    """Calls per wall sample for an implementation whose call takes about `estimate_us`: enough that one
    sample lasts ~`target_us`, between 1 and `max_calls`.

    The estimate is the graph regime's per-call time, which the same call's wall time never undercuts (the
    wall adds launch and Python overhead), so it can only ask for more calls than needed, never fewer.
    Without a usable estimate (none measured, not positive, not finite) or target (<= 0 turns the adaptation
    off), every sample takes `max_calls`.
    """
    max_calls = max(1, max_calls)
    if estimate_us is None or not (math.isfinite(estimate_us) and estimate_us > 0):
        return max_calls
    if not (math.isfinite(target_us) and target_us > 0):
        return max_calls
    wanted = target_us / estimate_us  # may overflow to inf for a tiny estimate: compare before math.ceil
    return max_calls if wanted >= max_calls else max(1, math.ceil(wanted))


def feed_for(host_us: float) -> float:
    """The busy-wait for a sample whose host work took about `host_us` (see FEED_FACTOR)."""
    if not math.isfinite(host_us) or host_us < 0:
        return FEED_MAX_US
    return min(FEED_MAX_US, max(FEED_MIN_US, FEED_FACTOR * host_us + FEED_MARGIN_US))


class WallRunner:
    """Times one implementation in the wall regime on its own InputSet (fed when given a FeedDevice)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        inputs: InputSet,
        sync: Callable[[], None],
        calls: int,
        flush_l2: Callable[[], None] | None = None,
        feed: FeedDevice | None = None,
        clock_ns: Callable[[], int] = _perf_counter_ns,
    ) -> None:
        self.fn = fn
        self.inputs = inputs
        self.sync = sync
        self.flush_l2 = flush_l2
        self.feed = feed
        self.clock_ns = clock_ns
        self.inputs.resize(1 if flush_l2 is not None else max(1, calls))
        self.mode = "fed" if feed is not None else "sync"
        self.feed_us: float | None = None  # sized from the first (sync-to-sync) sample
        self.starved_run = 0  # fed samples in a row whose busy-wait ran out
        self.starved = 0  # ...and in all
        self.settled = False
        self.last_host_us = 0.0
        self.last_gpu_us = 0.0
        self._last: Any = None

    @property
    def calls(self) -> int:
        return self.inputs.calls

    def settle(self) -> str:
        """End of warm-up: the mode is fixed from here on (sampling never switches it); returns it."""
        self.settled = True
        return self.mode

    def measure(self, before: Callable[[], None] | None = None) -> float:
        """One sample; time per call in µs. `before` runs after the inputs are restored, before the flush."""
        self.inputs.restore()
        if before is not None:
            before()
        if self.flush_l2 is not None:
            self.flush_l2()
        calls = [self.inputs.call(k) for k in range(self.calls)]
        if self.mode == "fed" and self.feed_us is not None:
            return self._fed(calls)
        elapsed_us = self._sync_to_sync(calls)
        if self.mode == "fed":  # the first sample of a fed runner: it sizes the busy-wait
            if elapsed_us > SYNC_ENOUGH_US and not self.settled:
                self.mode = "sync"
            else:
                self.feed_us = feed_for(elapsed_us)
        return elapsed_us / len(calls)

    def _sync_to_sync(self, calls: list[Any]) -> float:
        fn, clock, result = self.fn, self.clock_ns, None
        self.sync()
        start = clock()
        for args, kwargs in calls:
            result = fn(*args, **kwargs)
        self.sync()
        elapsed = clock() - start
        self._last = result
        self.last_host_us = self.last_gpu_us = elapsed / 1e3
        return elapsed / 1e3

    def _fed(self, calls: list[Any]) -> float:
        assert self.feed is not None and self.feed_us is not None
        fn, clock, feed, result = self.fn, self.clock_ns, self.feed, None
        self.sync()
        feed.open(self.feed_us)
        start = clock()
        for args, kwargs in calls:
            result = fn(*args, **kwargs)
        end = clock()
        feed.close()
        ran_out = feed.opened()
        self.sync()
        host_us, gpu_us = (end - start) / 1e3, feed.span_us()
        self._last = result
        self.last_host_us, self.last_gpu_us = host_us, gpu_us
        self._adapt(host_us, ran_out)
        return max(host_us, gpu_us) / len(calls)

    def _adapt(self, host_us: float, ran_out: bool) -> None:
        assert self.feed_us is not None
        if not ran_out:
            self.starved_run = 0
            self.feed_us = feed_for(host_us)
            return
        self.starved += 1
        self.starved_run += 1
        self.feed_us = min(FEED_MAX_US, max(2.0 * self.feed_us, feed_for(host_us)))
        if not self.settled and self.starved_run >= STARVED_SAMPLES_TO_SYNC:
            self.mode = "sync"  # it waits for the GPU itself: the busy-wait would be charged to it

    def last_return(self) -> Any:
        return self._last

    def release(self) -> None:
        self._last = None
