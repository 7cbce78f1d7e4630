"""Attributes profiled operator time to the repository's functions (regions), eager and CUDA-graph alike.

The `kernelbot scan --profile-cmd` bootstrap (templates/profile_sitecustomize.py) turns torch.profiler's
events into plain records and calls `attribute` on them; this module needs nothing but the standard library,
since it is copied next to the bootstrap into the profiled program's path.

Eager work: an operator's host time, device time (its own CUDA kernels) and kernel count go to the innermost
repository frame above it. Graph work: kernels replayed from a CUDA graph were launched by no Python code at
replay time, so they are attributed through the graph's capture. The bootstrap marks each capture and each
replay (`kernelbot::graph_capture::<id>` / `kernelbot::graph_replay::<id>` ranges); during the capture every
kernel launch is recorded with the region that issued it, in order, and each replay's kernels, in order, are
matched to those launches one to one (or, when the counts differ, the replay's device time is shared out in
proportion to each region's captured launches). Time spent capturing is set-up, not counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CAPTURE, REPLAY = "kernelbot::graph_capture::", "kernelbot::graph_replay::"
# CUDA runtime / driver calls that put one node on the stream: each becomes one device event per replay.
LAUNCH = re.compile(r"^(cuda|cu)(LaunchKernel\w*|LaunchCooperativeKernel\w*|Memcpy\w*Async|Memset\w*Async)")


@dataclass
class Event:
    """One profiler event, reduced to what attribution needs."""

    name: str
    start_us: float
    owner: tuple[str, int, str] | None  # (path, first line, function) of the innermost repository frame
    host_us: float = 0.0  # self CPU time
    device_us: float = 0.0  # self device time (kernels it launched, eagerly)
    kernels: list[float] = field(default_factory=list)  # durations of its device events, in order
    library: bool = False  # a library kernel (GEMM, convolution, fused attention)
    graph: tuple[str, int, int] | None = None  # (CAPTURE or REPLAY, graph id, range id) it runs inside


@dataclass
class RegionTotals:
    path: str
    function: str
    lines: list[int] = field(default_factory=list)
    host_us: float = 0.0
    device_us: float = 0.0  # eager + graph
    graph_device_us: float = 0.0  # of device_us, replayed from CUDA graphs
    ops: int = 0
    kernels: int = 0
    graph_kernels: int = 0
    library_host_us: float = 0.0
    library_device_us: float = 0.0


def attribute(events: list[Event]) -> list[dict[str, object]]:
    """Per region, its totals (dicts, for JSON)."""
    totals: dict[str, RegionTotals] = {}

    def region(owner: tuple[str, int, str]) -> RegionTotals:
        key = f"{owner[0]}:{owner[1]}:{owner[2]}"
        row = totals.setdefault(key, RegionTotals(owner[0], owner[2]))
        if owner[1] not in row.lines and len(row.lines) < 50:
            row.lines.append(owner[1])
        return row

    captured: dict[int, list[tuple[float, tuple[str, int, str] | None]]] = {}
    replays: dict[tuple[int, int], list[tuple[float, list[float]]]] = {}
    replay_totals: dict[tuple[int, int], float] = {}  # a replay range's own device total: the fallback
    for event in events:
        kind = event.graph[0] if event.graph else None
        if event.name.startswith(REPLAY) and event.graph is not None:
            replay_totals[(event.graph[1], event.graph[2])] = event.device_us
            continue
        if kind == CAPTURE:
            if LAUNCH.match(event.name):
                captured.setdefault(event.graph[1], []).append((event.start_us, event.owner))  # type: ignore[index]
            continue  # capturing runs nothing on the device: set-up
        if kind == REPLAY:
            if event.kernels:
                key = (event.graph[1], event.graph[2])  # type: ignore[index]
                replays.setdefault(key, []).append((event.start_us, event.kernels))
            continue
        if event.owner is None:
            continue
        row = region(event.owner)
        row.host_us += event.host_us
        row.device_us += event.device_us
        row.ops += 1
        row.kernels += len(event.kernels)
        if event.library:
            row.library_host_us += event.host_us
            row.library_device_us += event.device_us
    for key, total in replay_totals.items():
        if key not in replays and total > 0:  # its kernels were tied to no event inside it: the total only
            replays[key] = [(0.0, [total])]
    for (graph, _), parts in replays.items():
        launches = [owner for _, owner in sorted(captured.get(graph, []), key=lambda item: item[0])]
        kernels = [k for _, ks in sorted(parts, key=lambda item: item[0]) for k in ks]
        for owner, device_us, count in _share(launches, kernels):
            if owner is None:
                continue
            row = region(owner)
            row.device_us += device_us
            row.graph_device_us += device_us
            row.kernels += count
            row.graph_kernels += count
    return [dict(row.__dict__) for row in totals.values()]


def _share(
    launches: list[tuple[str, int, str] | None], kernels: list[float]
) -> list[tuple[tuple[str, int, str] | None, float, int]]:
    """(owner, device time, kernel count) for one replay: kernel i to launch i when the counts agree, else the
    replay's time in proportion to each owner's launches."""
    if not launches:
        return []
    if len(launches) == len(kernels):
        return [(owner, duration, 1) for owner, duration in zip(launches, kernels, strict=True)]
    total = sum(kernels)
    counts: dict[tuple[str, int, str] | None, int] = {}
    for owner in launches:
        counts[owner] = counts.get(owner, 0) + 1
    return [
        (owner, total * n / len(launches), round(len(kernels) * n / len(launches)))
        for owner, n in counts.items()
    ]


def graph_marker(names: list[str]) -> tuple[str, int, int] | None:
    """The innermost capture/replay range among an event's enclosing range names (innermost first):
    `kernelbot::graph_replay::3::17` -> (REPLAY, 3, 17)."""
    for name in names:
        for kind in (CAPTURE, REPLAY):
            if name.startswith(kind):
                graph, _, instance = name.removeprefix(kind).partition("::")
                try:
                    return kind, int(graph), int(instance or 0)
                except ValueError:
                    return None
    return None
