"""The GPU lock's timeline in a throughput run, read off the evaluator's per-case log lines ("timed CASE
[REGIME]: ..., 43 ms with the GPU lock held at 1764456789.123, ..."): how busy the lock was in the middle of
the run, away from the pool filling up and draining, and how long it sat free between two holders.

The whole-run share (throughput.py's `lock_busy`) cannot tell a lock left idle while workers wait from one
idle because no worker is ready yet; the middle of the run and the gaps between holds can.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from typing import Any

HOLD = re.compile(r"(\d+) ms with the GPU lock held at (\d+(?:\.\d+)?)(?: after (\d+) ms waiting)?")
# Gaps shorter than this are hand-overs between waiting workers; longer ones mean nobody was ready.
HANDOVER_S = 0.005


def holds(lines: Iterable[str]) -> list[tuple[float, float]]:
    """(start, end) of every hold in epoch seconds, sorted by start."""
    spans = []
    for line in lines:
        match = HOLD.search(line)
        if match:
            start = float(match.group(2))
            spans.append((start, start + int(match.group(1)) / 1e3))
    return sorted(spans)


def requests(lines: Iterable[str]) -> list[tuple[float, float]]:
    """(asked, got) of every hold whose line says how long it waited, in epoch seconds."""
    spans = []
    for line in lines:
        match = HOLD.search(line)
        if match and match.group(3) is not None:
            got = float(match.group(2))
            spans.append((got - int(match.group(3)) / 1e3, got))
    return spans


def idle_while_asked(holds_: list[tuple[float, float]], asks: list[tuple[float, float]]) -> float:
    """Seconds in which the lock was free although some worker was waiting for it. Near zero unless the
    hand-over itself is slow; the log's millisecond rounding adds up to ~1 ms per hold."""
    events = sorted([(a, 1) for a, g in asks if g > a] + [(g, -1) for a, g in asks if g > a])
    waiting, since, total = 0, 0.0, 0.0
    for t, step in events:
        if waiting > 0:
            total += max(0.0, (t - since) - _busy(holds_, since, t))
        waiting += step
        since = t
    return total


def _busy(spans: list[tuple[float, float]], lo: float, hi: float) -> float:
    return sum(max(0.0, min(end, hi) - max(start, lo)) for start, end in spans)


def timeline(lines: Iterable[str], trim: float = 0.1) -> dict[str, Any]:
    """Busy shares over the first-to-last-hold span and over its middle (`trim` cut at each end), and the
    free gaps between consecutive holds."""
    lines = list(lines)
    spans = holds(lines)
    if not spans:
        return {}
    first = spans[0][0]
    last = max(end for _, end in spans)
    span = last - first
    gaps, reach = [], spans[0][1]
    for start, end in spans[1:]:
        if start > reach:
            gaps.append(start - reach)
        reach = max(reach, end)
    lo, hi = first + trim * span, last - trim * span
    long_gaps = [g for g in gaps if g > HANDOVER_S]
    asks = requests(lines)
    waited = sum(g - a for a, g in asks)
    return {
        "holds": len(spans),
        "first_to_last_s": span,
        "busy_first_to_last": _busy(spans, first, last) / span if span > 0 else float("nan"),
        "busy_middle": _busy(spans, lo, hi) / (hi - lo) if hi > lo else float("nan"),
        "gap_ms_median": statistics.median(gaps) * 1e3 if gaps else 0.0,
        "gaps_over_5ms": len(long_gaps),
        "gaps_over_5ms_s": sum(long_gaps),
        # From the waits the log lines carry (absent in logs from before they did).
        "mean_waiting": waited / span if asks and span > 0 else float("nan"),
        "idle_while_asked_s": idle_while_asked(spans, asks) if asks else float("nan"),
    }
