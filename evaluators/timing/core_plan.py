"""Which CPU the wall regime times on: one physical core per GPU of the machine is kept for the worker that
holds that GPU's timing lock, and every other evaluation worker (and whatever it starts: Triton's compiler,
ptxas) stays off all of them, so a neighbour's compile never shares a core with a timed sample.

The plan is a pure function of what the machine says about itself, read once per process:
- the CPUs this process may use (`os.sched_getaffinity`), grouped into physical cores by
  `/sys/devices/system/cpu/cpuN/topology/thread_siblings_list` (an SMT sibling shares the core's pipeline,
  so the whole core is reserved);
- the machine's NVIDIA GPUs, whatever CUDA_VISIBLE_DEVICES says (`/proc/driver/nvidia/gpus/<pci>/information`,
  which names each GPU's UUID), in PCI order: two pools on two GPUs of one host then agree on who gets which
  core without talking to each other; each GPU's core is taken from its NUMA-local CPUs
  (`/sys/bus/pci/devices/<pci>/local_cpulist`) where it can be.
Cores are handed out from the highest-numbered down. Without /proc/driver/nvidia the CUDA device index
stands in for the machine-wide order (the plan says so: pools under different CUDA_VISIBLE_DEVICES may then
pick the same core). $KERNELBOT_TIMING_CPUS lists the timing CPUs by hand (one per GPU in machine order), or
turns the placement off ("off").
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TIMING_CPUS_ENV = "KERNELBOT_TIMING_CPUS"
# Reserving cores must leave at least this many CPUs for everything else the workers do.
MIN_SHARED_CPUS = 2


@dataclass(frozen=True)
class CorePlan:
    """Where the timing thread runs (`timing_cpu`) and where the rest of the workers runs (`shared`)."""

    timing_cpu: int | None  # None: nothing is pinned (`note` says why)
    reserved: frozenset[int] = frozenset()  # every GPU's timing core with its SMT siblings
    shared: frozenset[int] = frozenset()  # the allowed CPUs minus `reserved`
    note: str = ""

    @property
    def active(self) -> bool:
        return self.timing_cpu is not None


@dataclass(frozen=True)
class GpuSlot:
    """One NVIDIA GPU of the machine, in PCI order."""

    pci: str
    uuid: str  # normalised (see normalise_uuid)
    local_cpus: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Topology:
    allowed: frozenset[int]
    cores: tuple[frozenset[int], ...]  # the allowed CPUs grouped by physical core
    gpus: tuple[GpuSlot, ...] = ()  # empty: the machine did not list its GPUs
    notes: tuple[str, ...] = field(default=())


def parse_cpu_list(text: str) -> set[int]:
    """'0-3,8,10-11' -> {0, 1, 2, 3, 8, 10, 11} (the kernel's cpulist format); ValueError on garbage."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        lo, hi = int(first), int(last or first)
        if hi < lo:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.update(range(lo, hi + 1))
    return cpus


def normalise_uuid(text: str) -> str:
    """'GPU-58E5A3B4-...' and torch's '58e5a3b4-...' name the same GPU."""
    value = text.strip().lower()
    return value[4:] if value.startswith("gpu-") else value


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def group_cores(allowed: Iterable[int], sys_root: Path) -> tuple[frozenset[int], ...]:
    """The allowed CPUs grouped by physical core (a CPU without topology information is its own core)."""
    allowed = frozenset(allowed)
    groups: dict[frozenset[int], None] = {}
    for cpu in sorted(allowed):
        text = _read(sys_root / f"devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        try:
            siblings = parse_cpu_list(text) if text is not None else {cpu}
        except ValueError:
            siblings = {cpu}
        groups[frozenset((siblings | {cpu}) & allowed)] = None
    return tuple(groups)


def machine_gpus(proc_root: Path, sys_root: Path) -> tuple[GpuSlot, ...]:
    """The machine's NVIDIA GPUs in PCI order, from the driver's /proc entries (empty without them)."""
    slots = []
    base = proc_root / "driver/nvidia/gpus"
    try:
        entries = sorted(p for p in base.iterdir() if p.is_dir())
    except OSError:
        return ()
    for entry in entries:
        info = _read(entry / "information") or ""
        match = re.search(r"^GPU UUID:\s*(\S+)", info, re.MULTILINE)
        local_text = _read(sys_root / "bus/pci/devices" / entry.name / "local_cpulist")
        try:
            local = frozenset(parse_cpu_list(local_text)) if local_text else frozenset()
        except ValueError:
            local = frozenset()
        slots.append(GpuSlot(entry.name, normalise_uuid(match.group(1)) if match else "", local))
    return tuple(slots)


def pci_key(address: str) -> tuple[int, int, int] | None:
    """'0000:17:00.0' -> (domain, bus, device) as torch's device properties give them; None if malformed."""
    match = re.fullmatch(r"([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.[0-7]", address.strip())
    return (int(match.group(1), 16), int(match.group(2), 16), int(match.group(3), 16)) if match else None


def read_topology(sys_root: Path = Path("/sys"), proc_root: Path = Path("/proc")) -> Topology:
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is None:
        return Topology(frozenset(), (), notes=("this platform has no sched_getaffinity",))
    allowed = frozenset(getaffinity(0))
    return Topology(allowed, group_cores(allowed, sys_root), machine_gpus(proc_root, sys_root))


def _assign(cores: Sequence[frozenset[int]], gpus: Sequence[GpuSlot], slots: int) -> list[frozenset[int]]:
    """One core per slot, highest-numbered first, each from its GPU's local CPUs where one is free."""
    free = sorted(cores, key=min, reverse=True)
    taken: list[frozenset[int]] = []
    for slot in range(slots):
        if not free:
            break
        local = gpus[slot].local_cpus if slot < len(gpus) else frozenset()
        pick = next((core for core in free if core <= local), free[0])
        free.remove(pick)
        taken.append(pick)
    return taken


def plan_cores(
    topology: Topology,
    *,
    uuid: str | None = None,
    device_index: int = 0,
    device_count: int = 1,
    pci: tuple[int, int, int] | None = None,
    override: str | None = None,
    min_shared: int | None = None,
) -> CorePlan:
    """The plan for the GPU named by `uuid` or, failing that, by its PCI (domain, bus, device); else the
    `device_index` of `device_count` visible devices stands in for its place in the machine."""
    min_shared = MIN_SHARED_CPUS if min_shared is None else min_shared
    if topology.notes:
        return CorePlan(None, note="not pinned: " + "; ".join(topology.notes))
    allowed = topology.allowed
    if override is not None and override.strip():
        return _plan_from_override(override.strip(), allowed, device_index, uuid, topology)
    gpus = topology.gpus
    slot = machine_slot(gpus, uuid, pci)
    if slot is not None:
        slots, how = len(gpus), f"GPU {slot} of {len(gpus)} in PCI order ({gpus[slot].pci})"
    else:
        slot, slots = device_index, max(device_count, device_index + 1)
        how = (
            f"CUDA device {device_index} of {slots} (the machine lists no GPU with this UUID: pools under "
            "different CUDA_VISIBLE_DEVICES may pick the same core)"
        )
    taken = _assign(topology.cores, gpus, slots)
    reserved = frozenset().union(*taken) if taken else frozenset()
    shared = allowed - reserved
    if slot >= len(taken) or len(shared) < min_shared:
        return CorePlan(
            None,
            note=(
                f"not pinned: {len(allowed)} CPUs in {len(topology.cores)} cores allowed; a core for each of "
                f"{slots} GPUs would leave {len(shared)} CPUs for everything else (needs {min_shared})"
            ),
        )
    core = taken[slot]
    cpu = min(core)
    siblings = f" (SMT siblings {sorted(core - {cpu})} kept idle)" if len(core) > 1 else ""
    note = f"timing on cpu {cpu}{siblings} for {how}; other workers on {len(shared)} CPUs"
    return CorePlan(cpu, reserved, frozenset(shared), note)


def machine_slot(gpus: Sequence[GpuSlot], uuid: str | None, pci: tuple[int, int, int] | None) -> int | None:
    wanted = normalise_uuid(uuid) if uuid else ""
    for i, g in enumerate(gpus):
        if wanted and g.uuid == wanted:
            return i
    for i, g in enumerate(gpus):
        if pci is not None and pci_key(g.pci) == pci:
            return i
    return None


def _plan_from_override(
    text: str, allowed: frozenset[int], device_index: int, uuid: str | None, topology: Topology
) -> CorePlan:
    if text.lower() in ("off", "none", "0", "no"):
        return CorePlan(None, note=f"not pinned: turned off by ${TIMING_CPUS_ENV}")
    try:
        listed = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        return CorePlan(None, note=f"not pinned: ${TIMING_CPUS_ENV}={text!r} is not a list of CPUs")
    found = machine_slot(topology.gpus, uuid, None)
    slot = device_index if found is None else found
    reserved = frozenset(listed) & allowed
    if slot >= len(listed) or listed[slot] not in allowed:
        why = f"has no allowed CPU for GPU {slot}"
        return CorePlan(None, note=f"not pinned: ${TIMING_CPUS_ENV}={text!r} {why}")
    shared = allowed - reserved
    if not shared:
        return CorePlan(None, note=f"not pinned: ${TIMING_CPUS_ENV}={text!r} leaves no CPU for the rest")
    cpu = listed[slot]
    return CorePlan(cpu, reserved, shared, f"timing on cpu {cpu} for GPU {slot} (${TIMING_CPUS_ENV})")
