"""evaluators.roofline: byte counts from real (CPU) tensors, ceilings, floors and the class-15 finding."""

from __future__ import annotations

import textwrap

import pytest
import torch

from evaluators.errors import TaskError
from evaluators.result import Hardware
from evaluators.roofline import (
    Ceilings,
    Traffic,
    beyond_roofline,
    case_traffic,
    declared_flops,
    floor_for,
    unique_bytes,
)
from evaluators.task import load_task

H200 = Hardware(backend="triton-cuda", device="NVIDIA H200", memory_bandwidth_gbps=4800.0)


def test_ceilings_for_h200_use_the_datasheet_and_a_generous_l2():
    c = Ceilings.for_hardware(H200)
    assert c.dram_gbps == 4800.0
    assert c.l2_bytes == 60 << 20
    assert c.l2_gbps > 2.5 * c.dram_gbps  # above any measured Hopper L2 bandwidth
    assert Ceilings.for_hardware(H200, l2_bytes=123).l2_bytes == 123  # the measured size wins
    unknown = Ceilings.for_hardware(Hardware(device="Mystery GPU"))
    assert unknown.dram_gbps == 0.0 and unknown.peak_tflops == 0.0


def test_unique_bytes_counts_views_once_and_broadcasts_by_storage():
    base = torch.zeros(1000, dtype=torch.float32)
    assert unique_bytes([base]) == 4000
    assert unique_bytes([base[:500], base[500:]]) == 4000
    assert unique_bytes([base[:10]]) == 40  # a small view of a big buffer
    assert unique_bytes([torch.zeros(1).expand(1_000_000)]) == 4
    assert unique_bytes([]) == 0


def test_case_traffic_counts_fresh_outputs_mutations_and_listed_reads():
    x = torch.zeros(256, 1024, dtype=torch.bfloat16)
    w = torch.zeros(1024, dtype=torch.bfloat16)
    out = torch.zeros_like(x)
    t = case_traffic({"x": x, "weight": w}, out, changed_bytes=0, reads=["x", "weight"])
    assert t.bytes_written == 256 * 1024 * 2
    assert t.bytes_read == 256 * 1024 * 2 + 1024 * 2
    # A returned tensor that lives in an argument is counted through changed_bytes only.
    t = case_traffic({"x": x}, x[0], changed_bytes=12, reads=[])
    assert t.bytes_written == 12 and t.bytes_read == 0
    assert not case_traffic({"x": x}, None, 0, []).must_launch
    with pytest.raises(TaskError, match="not an argument"):
        case_traffic({"x": x}, out, 0, reads=["y"])


def test_floor_picks_the_largest_bound():
    c = Ceilings.for_hardware(H200)
    big = Traffic(bytes_written=512 << 20, bytes_read=512 << 20)  # 1 GiB: a ~250 µs copy
    f = floor_for(big, c, "graph", "hot")
    assert f.bound == "bytes"
    assert f.us == pytest.approx((1 << 30) / 4800e3)
    tiny = Traffic(bytes_written=64, bytes_read=64)
    assert floor_for(tiny, c, "graph", "hot").bound == "launch"
    assert floor_for(tiny, c, "wall", "hot").us == pytest.approx(1.0)
    assert floor_for(Traffic(0, 4096), c, "graph", "hot").bound == "none"
    flops = Traffic(bytes_written=1 << 20, bytes_read=1 << 20, flops=2 * 8192**3)
    assert floor_for(flops, c, "graph", "hot").bound == "flops"


def test_hot_working_sets_that_fit_in_l2_get_the_l2_ceiling():
    c = Ceilings.for_hardware(H200)
    mid = Traffic(bytes_written=16 << 20, bytes_read=16 << 20)  # 32 MiB < 60 MiB L2
    hot, cold = floor_for(mid, c, "graph", "hot"), floor_for(mid, c, "graph", "cold")
    assert hot.us < cold.us
    assert "L2" in hot.detail
    assert cold.us == pytest.approx((32 << 20) / 4800e3)


def test_beyond_roofline_flags_only_impossible_times():
    c = Ceilings.for_hardware(H200)
    floor = floor_for(Traffic(512 << 20, 512 << 20), c, "graph", "hot")  # ~224 µs
    assert beyond_roofline("big", "graph", 250.0, 300.0, floor) is None  # a legit fast copy
    assert beyond_roofline("big", "graph", 0.9 * floor.us, 300.0, floor) is None  # inside the margin
    finding = beyond_roofline("big", "graph", 3.0, 300.0, floor)
    assert finding is not None and finding.kind == "beyond_roofline" and finding.number == 15
    assert "3 µs" in finding.evidence and "bytes floor" in finding.evidence
    # When the reference (which really does the work) also beats the floor, the ceilings are wrong: no flag.
    assert beyond_roofline("big", "graph", 3.0, 5.0, floor) is None
    assert beyond_roofline("big", "graph", float("nan"), 300.0, floor) is None


def _task(tmp_path, roofline: str):
    (tmp_path / "task.toml").write_text(
        textwrap.dedent(
            f"""
            name = "mm"
            entry = "mm"
            {roofline}
            [[cases]]
            name = "m64"
            M = 64
            N = 128
            K = 256
            """
        )
    )
    (tmp_path / "reference.py").write_text("def mm(a, b):\n    return a @ b\n")
    (tmp_path / "inputs.py").write_text("def make_inputs(case, seed, device):\n    return (), {}\n")
    return load_task(tmp_path)


def test_declared_flops_number_expression_and_errors(tmp_path):
    task = _task(tmp_path, '[roofline]\nflops = "2 * M * N * K"')
    assert declared_flops(task, task.cases[0]) == 2 * 64 * 128 * 256
    (tmp_path / "task.toml").write_text(
        (tmp_path / "task.toml").read_text().replace('"2 * M * N * K"', "1e9")
    )
    assert declared_flops(task, task.cases[0]) == 1e9
    (tmp_path / "task.toml").write_text(
        (tmp_path / "task.toml").read_text().replace("1e9", "\"__import__('os')\"")
    )
    with pytest.raises(TaskError, match="only numbers"):
        declared_flops(task, task.cases[0])
    (tmp_path / "task.toml").write_text(
        (tmp_path / "task.toml").read_text().replace("__import__('os')", "2 * Q")
    )
    with pytest.raises(TaskError, match="'Q' is not a numeric case parameter"):
        declared_flops(task, task.cases[0])


def test_no_declared_flops_is_zero(tmp_path):
    task = _task(tmp_path, "")
    assert declared_flops(task, task.cases[0]) == 0.0
