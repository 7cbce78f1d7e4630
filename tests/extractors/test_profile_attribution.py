"""CUDA-graph attribution of the profiler scan, on events as the bootstrap reduces them: kernels replayed
from a graph go to the regions that launched them while the graph was captured; eager work to its own
region; capture itself counts nothing."""

from __future__ import annotations

from extractors.profile_attribution import CAPTURE, REPLAY, Event, attribute, graph_marker
from extractors.scan_profile import ProfiledFunction

MOE = ("/repo/moe.py", 10, "forward")
NORM = ("/repo/norm.py", 4, "forward")
STEP = ("/repo/runner.py", 30, "step")


def _rows(events: list[Event]) -> dict[str, dict]:
    return {str(row["function"]) + str(row["path"]): row for row in attribute(events)}


def test_replayed_kernels_go_to_the_regions_that_captured_them() -> None:
    events = [
        # capture of graph 0: norm launches one kernel, moe two (the ops' own time is set-up)
        Event("aten::mul", 1.0, NORM, host_us=50.0, graph=(CAPTURE, 0, 0)),
        Event("cudaLaunchKernel", 1.1, NORM, graph=(CAPTURE, 0, 0)),
        Event("cudaLaunchKernel", 2.0, MOE, graph=(CAPTURE, 0, 0)),
        Event("cuLaunchKernel", 2.5, MOE, graph=(CAPTURE, 0, 0)),
        # two replays, each running the three kernels in capture order
        Event("cudaGraphLaunch", 10.0, STEP, kernels=[3.0, 20.0, 7.0], graph=(REPLAY, 0, 1)),
        Event("cudaGraphLaunch", 20.0, STEP, kernels=[3.0, 22.0, 8.0], graph=(REPLAY, 0, 2)),
        # eager work outside any graph
        Event("aten::topk", 30.0, STEP, host_us=5.0, device_us=4.0, kernels=[4.0]),
    ]
    rows = _rows(events)
    norm, moe, step = rows["forward/repo/norm.py"], rows["forward/repo/moe.py"], rows["step/repo/runner.py"]
    assert norm["device_us"] == norm["graph_device_us"] == 6.0 and norm["graph_kernels"] == 2
    assert moe["device_us"] == moe["graph_device_us"] == 57.0 and moe["kernels"] == 4
    assert norm["host_us"] == 0.0 and norm["ops"] == 0  # capturing is set-up
    assert step["device_us"] == 4.0 and step["graph_device_us"] == 0.0 and step["kernels"] == 1


def test_a_replay_whose_kernels_do_not_match_the_capture_is_shared_by_launch_counts() -> None:
    events = [
        Event("cudaLaunchKernel", 1.0, NORM, graph=(CAPTURE, 3, 0)),
        Event("cudaLaunchKernel", 2.0, MOE, graph=(CAPTURE, 3, 0)),
        Event("cudaLaunchKernel", 3.0, MOE, graph=(CAPTURE, 3, 0)),
        # the kernels were tied to no event inside the replay range: only the range's total is known
        Event(f"{REPLAY}3::1", 10.0, STEP, device_us=90.0, graph=(REPLAY, 3, 1)),
    ]
    rows = _rows(events)
    assert rows["forward/repo/norm.py"]["graph_device_us"] == 30.0
    assert rows["forward/repo/moe.py"]["graph_device_us"] == 60.0


def test_markers_and_regimes() -> None:
    assert graph_marker(["aten::mul", f"{REPLAY}2::41", "python"]) == (REPLAY, 2, 41)
    assert graph_marker([f"{CAPTURE}0::0"]) == (CAPTURE, 0, 0)
    assert graph_marker(["aten::mul"]) is None
    graph = ProfiledFunction("m:f", "m.py", 10.0, 1.0, 10.0, 1, 1, graph_us=8.0)
    eager = ProfiledFunction("m:g", "m.py", 10.0, 1.0, 10.0, 1, 1, graph_us=2.0)
    assert (graph.regime, eager.regime) == ("graph", "wall")
    assert graph.to_dict()["regime"] == "graph"


def test_a_region_measured_on_a_gpu_carries_its_regime_to_the_target_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from evolution.search import SearchOverrides
    from kernelbot.scan.ranking import measured_regions
    from kernelbot.scan.runs import target_options

    rows = [ProfiledFunction("pkg.moe:MoE.forward", "pkg/moe.py", 90.0, 5.0, 90.0, 4, 6, graph_us=80.0)]
    (region,) = measured_regions(rows, {}, on_gpu=True)
    assert region.regime == "graph" and region.graph_share == 0.8889
    assert "89% in CUDA graph replays" in region.describe()
    options = target_options(
        profile="example", target=region.target, run_dir=tmp_path, repo=tmp_path, search=SearchOverrides(),
        seeds=[], open_pr=False, fork=None, token_env="T", max_open=1, benchmark_runs=None, config=None,
        regime=("graph", "scan: 89% of its GPU time in CUDA graph replays"),
    )  # fmt: skip
    assert options.regime == "graph" and options.regime_from.startswith("scan: 89%")
