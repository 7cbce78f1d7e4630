"""Issue 5 on a CPU machine: two evaluation pools side by side (as there would be one per GPU), and one pool's
processes SIGKILLed while they judge candidates. No evaluation may be lost: every submission still gets the
verdict it deserves, and the run finishes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evaluators.task import load_task
from tests.example_tasks import SMALL_CASES, silu_and_mul_task

pytest.importorskip("psutil", reason="bench.scaling finds a pool's processes with psutil")


@pytest.mark.slow
def test_killing_one_pools_workers_mid_run_loses_no_evaluation(tmp_path: Path) -> None:
    import bench.scaling as scaling
    from bench.throughput import collect

    tasks_dir = tmp_path / "tasks"
    task = silu_and_mul_task(tasks_dir, keep=SMALL_CASES, candidates=True)
    for extra in sorted((task / "candidates").glob("*.py"))[1:]:
        extra.unlink()  # one candidate and its three variants keep the run short on the interpreter
    subs = collect(tasks_dir, variants=3, rounds=1)
    tasks = {s.task: load_task(s.task) for s in subs}
    scaling.BACKEND = "triton-interpret"
    row = asyncio.run(scaling._run("local", 2, 1, subs, tasks, kill_after_s=2.0))

    assert row["killed_processes"] >= 2  # the zygote and the worker judging a candidate at least
    assert row["pool_worker_crashes"] >= 1  # the pool saw its worker die...
    assert row["lost"] == 0  # ...and judged that candidate again instead of blaming it
    assert len(row["verdicts"]) == len(subs) == 4
    assert all(v["passed"] for v in row["verdicts"]), row["verdicts"]
