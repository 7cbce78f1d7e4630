"""Classes 14 and 15 are decided from timings, which this machine cannot produce: the decision functions
(scoring.aggregate, roofline.floor_for / beyond_roofline) on synthetic timings shaped like what the c14 and
c15 cheats produce on a GPU. The real runs are in test_gpu_cheats.py."""

from __future__ import annotations

from pathlib import Path

from evaluators.result import CaseResult, Hardware, RegimeTiming, TimingStats
from evaluators.roofline import Ceilings, Traffic, beyond_roofline, floor_for
from evaluators.scoring import aggregate
from evaluators.task import Case, Task

H200 = Hardware(backend="triton-cuda", device="NVIDIA H200", memory_bandwidth_gbps=4800.0)
TASK = Task(root=Path("."), name="scale_add", entry="scale_add", regime="graph", cases=(Case("a", {}),))


def timed(name: str, speedup: float, spread: float = 0.02) -> CaseResult:
    stats = TimingStats(median_us=10.0, cv=0.002, samples=100)
    timing = RegimeTiming(stats, stats, speedup, speedup * (1 - spread), speedup * (1 + spread))
    return CaseResult(name=name, params={}, passed=True, timings={"graph": timing})


def test_one_fast_case_driving_the_aggregate_is_class_14() -> None:
    # c14: 2x on the case it was tuned for, 0.7x elsewhere: the geometric mean still looks like a speedup.
    result = aggregate(TASK, [timed("n1000", 0.7), timed("n3000", 2.0), timed("n5000", 0.8)], H200)
    assert [f.number for f in result.findings] == [14]
    assert result.score == 0.0 and "n3000" in result.findings[0].evidence


def test_an_even_speedup_is_not_class_14() -> None:
    result = aggregate(TASK, [timed("n1000", 1.4), timed("n3000", 1.6), timed("n5000", 1.5)], H200)
    assert result.findings == [] and result.score > 1.3


def test_a_time_below_the_memory_floor_is_class_15() -> None:
    # c15 on n3000 float32: 3 vectors of 12 kB must move; the cached call moves none.
    ceilings = Ceilings.for_hardware(H200)
    traffic = Traffic(bytes_written=64 << 20, bytes_read=128 << 20)  # a cold, large case
    floor = floor_for(traffic, ceilings, "graph", "cold")
    assert floor.bound == "bytes" and 40 < floor.us < 45  # 192 MiB at 4.8 TB/s
    finding = beyond_roofline("n3000", "graph", candidate_us=3.0, reference_us=90.0, floor=floor)
    assert finding is not None and finding.number == 15
    assert beyond_roofline("n3000", "graph", candidate_us=45.0, reference_us=90.0, floor=floor) is None
    # If the reference itself beats the floor, the ceilings are wrong for this device, not the candidate fast.
    assert beyond_roofline("n3000", "graph", candidate_us=3.0, reference_us=3.5, floor=floor) is None


def test_a_call_that_writes_must_launch_a_kernel() -> None:
    floor = floor_for(
        Traffic(bytes_written=12_000, bytes_read=24_000), Ceilings.for_hardware(H200), "graph", "hot"
    )
    assert floor.us >= 0.25  # at least one kernel node per replayed call
    assert beyond_roofline("n3000", "graph", candidate_us=0.02, reference_us=4.0, floor=floor) is not None
