"""evaluators.timing.core_plan: which core the wall regime times on, planned from a machine's /sys and /proc
(real directory trees in tmp_path shaped like a two-socket host with SMT and NVIDIA GPUs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluators.timing.core_plan import (
    Topology,
    group_cores,
    machine_gpus,
    normalise_uuid,
    parse_cpu_list,
    plan_cores,
)

UUIDS = ("GPU-0a1b2c3d-0000-1111-2222-333344445555", "GPU-9f8e7d6c-6666-7777-8888-999900001111")


def fake_machine(root: Path, cpus: int = 16, smt: bool = True, gpus: int = 2) -> tuple[Path, Path]:
    """`cpus` logical CPUs over two NUMA nodes (CPU i and i + cpus/2 are SMT siblings when `smt`), and `gpus`
    GPUs, GPU k attached to node k."""
    sys_root, proc_root = root / "sys", root / "proc"
    half = cpus // 2
    for cpu in range(cpus):
        topo = sys_root / f"devices/system/cpu/cpu{cpu}/topology"
        topo.mkdir(parents=True)
        core = cpu % half if smt else cpu
        siblings = f"{core},{core + half}" if smt else f"{cpu}"
        topo.joinpath("thread_siblings_list").write_text(siblings + "\n")
    cores_per_node = (half if smt else cpus) // 2
    for k in range(gpus):
        pci = f"0000:{0x17 + 0x40 * k:02x}:00.0"
        info = proc_root / "driver/nvidia/gpus" / pci
        info.mkdir(parents=True)
        info.joinpath("information").write_text(
            f"Model: \t\t NVIDIA H200\nIRQ:   \t\t 123\nGPU UUID: \t {UUIDS[k]}\nBus Location: \t {pci}\n"
        )
        dev = sys_root / "bus/pci/devices" / pci
        dev.mkdir(parents=True)
        lo, hi = k * cores_per_node, (k + 1) * cores_per_node - 1
        local = f"{lo}-{hi},{lo + half}-{hi + half}" if smt else f"{lo}-{hi}"
        dev.joinpath("local_cpulist").write_text(local + "\n")
    return sys_root, proc_root


def topology(root: Path, allowed: set[int], **machine) -> Topology:
    sys_root, proc_root = fake_machine(root, **machine)
    return Topology(frozenset(allowed), group_cores(allowed, sys_root), machine_gpus(proc_root, sys_root))


def test_cpu_lists_and_uuids_parse_as_the_kernel_and_torch_write_them():
    assert parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpu_list("") == set()
    with pytest.raises(ValueError):
        parse_cpu_list("3-1")
    assert normalise_uuid("GPU-0A1B") == normalise_uuid("0a1b") == "0a1b"


def test_each_gpu_gets_a_whole_core_near_it_and_the_workers_get_the_rest(tmp_path):
    topo = topology(tmp_path, set(range(16)))
    assert [g.uuid for g in topo.gpus] == [normalise_uuid(u) for u in UUIDS]
    assert len(topo.cores) == 8 and frozenset({3, 11}) in topo.cores
    first = plan_cores(topo, uuid="0a1b2c3d-0000-1111-2222-333344445555")  # torch's spelling of GPU 0
    second = plan_cores(topo, uuid=UUIDS[1])
    # GPU 0 sits on node 0 (cores 0-3), GPU 1 on node 1 (cores 4-7): the highest free core of each node.
    assert (first.timing_cpu, second.timing_cpu) == (3, 7)
    assert first.reserved == second.reserved == {3, 11, 7, 15}  # both cores, SMT siblings included
    assert first.shared == second.shared == set(range(16)) - {3, 11, 7, 15}
    assert "SMT siblings [11] kept idle" in first.note and "GPU 0 of 2 in PCI order" in first.note


def test_a_gpu_whose_uuid_reads_otherwise_is_found_by_its_pci_address(tmp_path):
    topo = topology(tmp_path, set(range(16)))
    assert [g.pci for g in topo.gpus] == ["0000:17:00.0", "0000:57:00.0"]
    by_pci = plan_cores(topo, uuid="<torch._C._CUuuid object>", pci=(0, 0x57, 0))
    assert by_pci.timing_cpu == plan_cores(topo, uuid=UUIDS[1]).timing_cpu == 7
    assert "GPU 1 of 2 in PCI order (0000:57:00.0)" in by_pci.note


def test_without_smt_or_locality_cores_go_from_the_top(tmp_path):
    topo = topology(tmp_path, set(range(16)), smt=False, gpus=1)
    plan = plan_cores(topo, uuid=UUIDS[0])
    assert plan.timing_cpu == 7  # node-local first: GPU 0's CPUs are 0-7
    no_gpus = Topology(topo.allowed, topo.cores)
    fallback = plan_cores(no_gpus, device_index=1, device_count=2)
    assert (fallback.timing_cpu, fallback.reserved) == (14, {15, 14})
    assert "CUDA device 1 of 2" in fallback.note and "may pick the same core" in fallback.note


def test_a_cpuset_narrower_than_the_machine_is_respected(tmp_path):
    topo = topology(tmp_path, {0, 1, 2, 3, 8, 9, 10, 11})  # node 0 only
    first, second = plan_cores(topo, uuid=UUIDS[0]), plan_cores(topo, uuid=UUIDS[1])
    assert first.timing_cpu == 3 and second.timing_cpu == 2  # GPU 1 has no local core allowed: next free
    assert first.shared == {0, 1, 8, 9}


def test_too_few_cpus_pin_nothing_and_say_why(tmp_path):
    topo = topology(tmp_path, {0, 8}, gpus=1)  # one core, two SMT threads
    plan = plan_cores(topo, uuid=UUIDS[0])
    assert not plan.active and plan.timing_cpu is None
    assert plan.note.startswith("not pinned: 2 CPUs in 1 cores allowed") and "needs 2" in plan.note
    assert not plan_cores(Topology(frozenset(), (), notes=("no sched_getaffinity",))).active


def test_the_environment_can_name_the_cpus_or_turn_placement_off(tmp_path):
    topo = topology(tmp_path, set(range(16)))
    listed = plan_cores(topo, uuid=UUIDS[1], override="5,6")
    assert (listed.timing_cpu, listed.reserved, listed.shared) == (6, {5, 6}, set(range(16)) - {5, 6})
    assert not plan_cores(topo, uuid=UUIDS[0], override="off").active
    assert "not a list of CPUs" in plan_cores(topo, override="fast").note
    assert "no allowed CPU for GPU 1" in plan_cores(topo, uuid=UUIDS[1], override="5").note
