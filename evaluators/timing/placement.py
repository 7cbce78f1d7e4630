"""The host side of wall timing: keeping the evaluation workers off the timing cores, pinning the timing
thread onto its core while it holds the GPU lock, and bringing that core's clock up before the first sample.

A worker applies `place_process` as it starts (every thread of it, and with them everything it will start,
leaves the reserved cores; a zygote does the same, so its forks start placed) and again once the GPU is known.
The timing stage enters `pinned` inside the GPU lock for each wall-regime case: the calling thread moves onto
the GPU's timing core and comes back when the case is sampled. So holding the lock means holding the core: no
neighbour's compile, correctness run or warm-up can land on it while a sample is taken.

Everything goes through an `Affinity` seam (the OS calls), so where the OS refuses (another platform, a
cpuset that forbids the CPU) nothing is pinned and the note says why; tests pass a recording fake.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluators.timing.core_plan import TIMING_CPUS_ENV, CorePlan, Topology, plan_cores, read_topology

_perf_counter = time.perf_counter


class Affinity:
    """The OS calls behind placement: Linux sched_setaffinity per thread (tid 0: the calling thread)."""

    @property
    def available(self) -> bool:
        return hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")

    def threads(self) -> list[int]:
        """This process's thread ids (only the calling thread where /proc/self/task is not readable)."""
        try:
            return sorted(int(name) for name in os.listdir("/proc/self/task"))
        except OSError:
            return [0]

    def get(self, tid: int) -> set[int]:
        return set(os.sched_getaffinity(tid))

    def set(self, tid: int, cpus: set[int] | frozenset[int]) -> None:
        os.sched_setaffinity(tid, cpus)


OS_AFFINITY = Affinity()


def place_process(plan: CorePlan, affinity: Affinity = OS_AFFINITY) -> str:
    """Move every thread of this process onto the plan's shared CPUs; returns what was done, in words."""
    if not plan.active:
        return plan.note
    if not affinity.available:
        return "not placed: this platform cannot set CPU affinity"
    moved, refused = 0, ""
    for tid in affinity.threads():
        try:
            affinity.set(tid, plan.shared)
            moved += 1
        except ProcessLookupError:  # the thread ended meanwhile
            continue
        except OSError as exc:
            refused = refused or f"{type(exc).__name__}: {exc}"
    if refused and not moved:
        return f"not placed: the OS refused the shared CPUs ({refused})"
    return f"{moved} threads kept off cpus {sorted(plan.reserved)}" + (f" ({refused})" if refused else "")


@contextlib.contextmanager
def pinned(plan: CorePlan, affinity: Affinity = OS_AFFINITY) -> Iterator[str]:
    """The calling thread on the plan's timing CPU for the block; yields a note saying where it ran."""
    if not plan.active or plan.timing_cpu is None:
        yield plan.note
        return
    if not affinity.available:
        yield "not pinned: this platform cannot set CPU affinity"
        return
    try:
        before = affinity.get(0)
        affinity.set(0, {plan.timing_cpu})
    except OSError as exc:
        yield f"not pinned: the OS refused cpu {plan.timing_cpu} ({type(exc).__name__}: {exc})"
        return
    try:
        yield f"on cpu {plan.timing_cpu}"
    finally:
        with contextlib.suppress(OSError):  # back where it was: a worker's thread, on the shared CPUs
            affinity.set(0, before)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection for the block (what timeit does): a collection's pause of a few ms would
    land inside one sample. Nothing is collected first (that can take longer than the sampling); a collection
    that falls due meanwhile runs after the block."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- the CPU clock -------------------------------------------------------------------------------------

# Chunks of spinning whose durations must agree within WARM_TOLERANCE before the core counts as steady.
WARM_WINDOW = 5
WARM_TOLERANCE = 0.03
WARM_MIN_MS = 1.0
FOLLOW_UP_CPU_WARMUP_MS = 2.0


def _spin_chunk() -> None:
    total = 0
    for i in range(400):  # ~10-20 us of interpreter work on a server core
        total += i * i
    if total < 0:  # never: keeps the loop from being optimised into nothing
        raise AssertionError


@dataclass
class CpuWarmup:
    elapsed_ms: float = 0.0
    chunks: int = 0
    steady: bool = False

    def describe(self) -> str:
        state = "steady" if self.steady else "not steady"
        return f"cpu warm-up {self.elapsed_ms:.1f} ms ({state})"


def warm_cpu(
    max_ms: float,
    *,
    min_ms: float = WARM_MIN_MS,
    clock: Callable[[], float] = _perf_counter,
    work: Callable[[], None] = _spin_chunk,
    window: int = WARM_WINDOW,
    tolerance: float = WARM_TOLERANCE,
) -> CpuWarmup:
    """Spin fixed chunks of work until the last `window` took the same time within `tolerance` (the core's
    clock has stopped climbing out of an idle state) after at least `min_ms`, or until `max_ms` passed."""
    out = CpuWarmup()
    start = clock()
    recent: list[float] = []
    while True:
        t0 = clock()
        work()
        t1 = clock()
        out.chunks += 1
        recent = [*recent, t1 - t0][-window:]
        elapsed_ms = (t1 - start) * 1e3
        if len(recent) == window and elapsed_ms >= min_ms and max(recent) <= min(recent) * (1.0 + tolerance):
            out.steady = True
            break
        if elapsed_ms >= max_ms:
            break
    out.elapsed_ms = (clock() - start) * 1e3
    return out


# --- the process's plan ----------------------------------------------------------------------------------


@dataclass
class _ProcessPlan:
    plan: CorePlan | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_PROCESS = _ProcessPlan()


def early_plan(topology: Topology) -> CorePlan | None:
    """The shared CPUs before the GPU is known: every listed GPU's core is reserved whichever is ours, so the
    shared set is the same for all of them (None when the machine lists no GPUs: wait for the device)."""
    if not topology.gpus:
        return None
    return plan_cores(topology, uuid=topology.gpus[0].uuid, override=os.environ.get(TIMING_CPUS_ENV))


def place_early(sys_root: Path = Path("/sys"), proc_root: Path = Path("/proc")) -> str:
    """At a worker's (or zygote's) start, before any device exists: off the timing cores if they are known."""
    plan = early_plan(read_topology(sys_root, proc_root))
    return place_process(plan) if plan is not None else "placement waits for the device"


def _device_identity(device: str) -> tuple[str | None, tuple[int, int, int] | None, int, int]:
    """(UUID, PCI (domain, bus, device), index, visible count) of a CUDA device; what is unknown is None."""
    if not device.startswith("cuda"):
        return None, None, 0, 1
    import torch

    index = torch.device(device).index or 0
    try:
        props = torch.cuda.get_device_properties(index)
        count = torch.cuda.device_count()
    except Exception:  # the index stands in (the plan's note says so)
        return None, None, index, index + 1
    uuid = getattr(props, "uuid", None)
    domain, bus, dev = (
        getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")
    )
    pci: tuple[int, int, int] | None = None
    if isinstance(domain, int) and isinstance(bus, int) and isinstance(dev, int):
        pci = (domain, bus, dev)
    return (str(uuid) if uuid else None), pci, index, count


def process_plan(device: str, enabled: bool = True) -> CorePlan:
    """This process's plan for `device` (read and computed once). It moves nothing: a worker places itself
    (place_worker); a bench script that times in its own process only pins while it samples."""
    if not enabled:
        return CorePlan(None, note="not pinned: turned off (timing.cpu_affinity)")
    with _PROCESS.lock:
        if _PROCESS.plan is None:
            uuid, pci, index, count = _device_identity(device)
            _PROCESS.plan = plan_cores(
                read_topology(),
                uuid=uuid,
                pci=pci,
                device_index=index,
                device_count=count,
                override=os.environ.get(TIMING_CPUS_ENV),
            )
        return _PROCESS.plan


def place_worker(config: dict[str, Any], backend: Any) -> str:
    """A worker with its job: plan for its device and place the whole process (only where it times)."""
    timing = config.get("timing") or {}
    if not getattr(backend, "can_time", False):
        return "not placed: this backend does not time"
    try:
        plan = process_plan(str(getattr(backend, "device", "")), bool(timing.get("cpu_affinity", True)))
        placed = place_process(plan)
        note = plan.note if placed == plan.note else f"{plan.note}; {placed}"
    except Exception as exc:  # placement serves timing quality; it never stops an evaluation
        note = f"not placed ({type(exc).__name__}: {exc})"
    print(f"kernelbot worker: cpu placement: {note}", file=sys.stderr, flush=True)
    return note
