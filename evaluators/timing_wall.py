"""The wall regime: launch-inclusive host time, as code that runs eagerly (before a graph replay, in the
scheduler) costs. Device sync, `calls` back-to-back calls, device sync; the host clock between the two syncs,
divided by `calls`, is the time per call, so Python overhead and launch latency count as much as the kernel.

The number of calls per sample is chosen per implementation (wall_calls_for): enough that a slow one's
sample lasts about TimingConfig.wall_sample_target_us, at most TimingConfig.wall_calls. Cold-cache tasks time
one call per sample, with the L2 flush (and a sync that waits for it) before the clock starts. The host clock
is bound at import, before any candidate code runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from evaluators.timing_inputs import InputSet

_perf_counter_ns = time.perf_counter_ns


def wall_calls_for(estimate_us: float | None, target_us: float, max_calls: int) -> int:
    """Calls per wall sample for an implementation whose call takes about `estimate_us`: enough that one
    sample lasts ~`target_us`, between 1 and `max_calls`.

    The sync at each end of a sample costs the same whatever the number of calls, so calls only amortise it:
    past ~target_us of work per sample more calls buy nothing but GPU time. The estimate is the graph regime's
    per-call time, which the same call's wall time never undercuts (the wall adds launch and Python overhead),
    so it can only ask for more calls than needed, never fewer. Without a usable estimate (none measured, not
    positive, not finite) or target (<= 0 turns the adaptation off), every sample takes `max_calls`.
    """
    max_calls = max(1, max_calls)
    if estimate_us is None or not (math.isfinite(estimate_us) and estimate_us > 0):
        return max_calls
    if not (math.isfinite(target_us) and target_us > 0):
        return max_calls
    wanted = target_us / estimate_us  # may overflow to inf for a tiny estimate: compare before math.ceil
    return max_calls if wanted >= max_calls else max(1, math.ceil(wanted))


class WallRunner:
    """Times one implementation in the wall regime on its own InputSet."""

    def __init__(
        self,
        fn: Callable[..., Any],
        inputs: InputSet,
        sync: Callable[[], None],
        calls: int,
        flush_l2: Callable[[], None] | None = None,
    ) -> None:
        self.fn = fn
        self.inputs = inputs
        self.sync = sync
        self.flush_l2 = flush_l2
        self.inputs.resize(1 if flush_l2 is not None else max(1, calls))
        self._last: Any = None

    @property
    def calls(self) -> int:
        return self.inputs.calls

    def measure(self, before: Callable[[], None] | None = None) -> float:
        """One batch; microseconds per call. `before` runs after the inputs are restored, before the flush."""
        self.inputs.restore()
        if before is not None:
            before()
        if self.flush_l2 is not None:
            self.flush_l2()
        fn, calls = self.fn, [self.inputs.call(k) for k in range(self.calls)]
        result = None
        self.sync()
        start = _perf_counter_ns()
        for args, kwargs in calls:
            result = fn(*args, **kwargs)
        self.sync()
        elapsed = _perf_counter_ns() - start
        self._last = result
        return elapsed / 1e3 / len(calls)

    def last_return(self) -> Any:
        return self._last

    def release(self) -> None:
        self._last = None
