"""Evaluation throughput on 1, 2 (, 4 ...) GPUs, through the local executor and through Ray, plus a fault run
that kills one GPU's workers mid-run and checks that every candidate still gets a real verdict.

The same submissions as bench/throughput.py (the example tasks' candidates and their tuning variants) are
judged by `evolution.executors.LocalExecutor` (one WorkerPool per GPU) and `evolution.ray_executor.
RayExecutor` (one actor per GPU, each hosting a WorkerPool), with the GPU count varied. Rate = candidates
fully evaluated (timing stage completed) per minute of wall time; scaling efficiency = rate(n) / (n *
rate(1)). The clock starts once every pool is warm.

Run from the repository root on a machine with several GPUs:
    PYTHONPATH=. python bench/scaling.py --out bench-out/scaling --gpus 1,2 --executors local,ray --kill
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.meta import run_meta
from bench.throughput import DEFAULT_TASKS, Submission, collect

BACKEND = "triton-cuda"  # --backend triton-interpret runs the plumbing on a CPU machine (nothing is timed)


def _verdict(evaluated: Any, sub: Submission) -> dict[str, Any]:
    r = evaluated.result
    return {
        "label": sub.label,
        "stage": r.stage.value,
        "passed": r.passed,
        "reason": r.reason[:200],
        "worker": evaluated.worker,
        "attempts": evaluated.attempts,
    }


def _make_executor(kind: str, gpus: int, workers: int, backend: str) -> Any:
    from evaluators.config import EvalConfig

    if kind == "local":
        from evolution.executors import LocalExecutor

        return LocalExecutor(backend, tuple(range(gpus)), workers, EvalConfig(), max_attempts=3)
    from evolution.ray_executor import RayExecutor

    return RayExecutor("ray", backend=backend, config=EvalConfig(), workers_per_actor=workers, actors=gpus)


def _judging(slot: Any) -> bool:
    """Is a worker of this slot judging a candidate? (a local pool: its busy workers; Ray: in-flight count)"""
    busy = getattr(slot.handle, "_busy", None)
    return bool(busy) if busy is not None else slot.in_flight > 0


def _kill_pool_workers(executor: Any, slot_index: int) -> int:
    """SIGKILL every worker process of one local GPU's pool (found by their working directory)."""
    import psutil

    root = str(executor.slots[slot_index].handle._root)
    killed = 0
    for proc in psutil.process_iter(["pid", "cwd"]):
        cwd = proc.info.get("cwd") or ""
        if cwd.startswith(root) and proc.pid != os.getpid():
            try:
                os.kill(proc.pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


def _kill_ray_actor(executor: Any, slot_index: int) -> int:
    import ray

    ray.kill(executor.slots[slot_index].handle, no_restart=True)
    return 1


async def _run(
    kind: str, gpus: int, workers: int, subs: list[Submission], tasks: dict[Path, Any], kill_after_s: float
) -> dict:
    executor = _make_executor(kind, gpus, workers, BACKEND)
    await executor.start()
    try:
        # Warm every slot with one evaluation each, off the clock.
        await asyncio.gather(*(executor.evaluate(tasks[subs[0].task], subs[0].source) for _ in range(gpus)))
        killed = 0

        async def killer() -> None:
            nonlocal killed
            await asyncio.sleep(kill_after_s)
            victim = len(executor.slots) - 1
            slot = executor.slots[victim]
            # Make sure the kill hits an evaluation a worker is judging, past its warm-up: an evaluation still
            # waiting for a worker (a boxed worker takes a while to start on a loaded machine) is not one.
            while True:
                while not _judging(slot):
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.3)
                if _judging(slot):
                    break
            killed = (_kill_pool_workers if kind == "local" else _kill_ray_actor)(executor, victim)
            print(f"killed {killed} process(es) of {executor.slots[victim].name}", flush=True)

        t0 = time.perf_counter()
        kill_task = asyncio.create_task(killer()) if kill_after_s > 0 else None
        done = await asyncio.gather(*(executor.evaluate(tasks[s.task], s.source) for s in subs))
        elapsed = time.perf_counter() - t0
        if kill_task is not None:
            kill_task.cancel()
        # A pool re-runs a job itself when its worker died with the zygote (not the candidate's doing), so a
        # local kill shows up here rather than as an executor retry.
        crashed = sum(getattr(getattr(s.handle, "stats", None), "crashed", 0) for s in executor.slots)
    finally:
        await executor.close()
    verdicts = [_verdict(e, s) for e, s in zip(done, subs, strict=True)]
    full = sum(1 for v in verdicts if v["passed"] and v["stage"] == "timing")
    return {
        "executor": kind,
        "gpus": gpus,
        "workers_per_gpu": workers,
        "submissions": len(subs),
        "fully_evaluated": full,
        "elapsed_s": elapsed,
        "per_minute": full / (elapsed / 60.0),
        "by_stage": dict(Counter(f"{v['stage']}:{'pass' if v['passed'] else 'fail'}" for v in verdicts)),
        "retried": sum(1 for v in verdicts if v["attempts"] > 1),
        "killed_processes": killed,
        "pool_worker_crashes": crashed,
        "lost": sum(1 for v in verdicts if "SIGKILL" in v["reason"]),
        "verdicts": verdicts,
    }


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Evaluation scaling over GPUs",
        "",
        f"- machine: {meta['gpus_visible']} x {meta['device']}; torch {meta['torch']}, "
        f"triton {meta['triton']}, ray {meta['ray']}, Python {meta['python']}",
        f"- date: {meta['date']}; command: `{meta['command']}`",
        "",
        "| executor | GPUs | workers/GPU | submissions | fully evaluated | wall (s) | per minute "
        "| scaling vs 1 GPU | fault run: processes killed / retried / lost |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    base = {r["executor"]: r["per_minute"] for r in rows if r["gpus"] == 1 and not r.get("kill")}
    for r in rows:
        one = base.get(r["executor"])
        eff = f"{r['per_minute'] / (r['gpus'] * one):.0%}" if one else "-"
        fault = f"{r['killed_processes']} / {r['retried']} / {r['lost']}" if r.get("kill") else "-"
        label = f"{r['executor']} (kill)" if r.get("kill") else r["executor"]
        lines.append(
            f"| {label} | {r['gpus']} | {r['workers_per_gpu']} | {r['submissions']} | {r['fully_evaluated']} "
            f"| {r['elapsed_s']:.1f} | {r['per_minute']:.1f} | {eff} | {fault} |"
        )
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench/scaling.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    parser.add_argument("--gpus", default="1,2", help="GPU counts to measure, e.g. 1,2,4")
    parser.add_argument("--executors", default="local,ray")
    parser.add_argument("--workers", type=int, default=8, help="warm workers per GPU")
    parser.add_argument("--variants", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--kill", action="store_true", help="also a run on the most GPUs that kills one")
    parser.add_argument("--backend", default="triton-cuda", help="triton-interpret: a CPU smoke run")
    parser.add_argument("--kill-after", type=float, default=8.0, help="seconds into the fault run")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    global BACKEND
    BACKEND = args.backend

    import torch

    from evaluators.task import load_task

    subs = collect(args.tasks, args.variants, args.rounds)
    tasks = {s.task: load_task(s.task) for s in subs}
    counts = [int(n) for n in args.gpus.split(",")]
    visible = torch.cuda.device_count() if args.backend != "triton-interpret" else 1
    rows = []
    for kind in args.executors.split(","):
        for n in counts:
            if n > visible:
                print(f"skip {kind} x{n}: only {visible} GPU(s) visible", file=sys.stderr)
                continue
            row = asyncio.run(_run(kind, n, args.workers, subs, tasks, 0.0))
            rows.append(row)
            print(
                f"{kind} x{n}: {row['per_minute']:.1f}/min ({row['fully_evaluated']}/{len(subs)})", flush=True
            )
        if args.kill and max(counts) <= visible and max(counts) > 1:
            row = asyncio.run(_run(kind, max(counts), args.workers, subs, tasks, args.kill_after))
            row["kill"] = True
            rows.append(row)
            print(
                f"{kind} x{max(counts)} with a kill: lost {row['lost']}, retried {row['retried']}", flush=True
            )
    try:
        import ray

        ray_version = ray.__version__
    except ImportError:
        ray_version = "not installed"
    meta = run_meta(gpus_visible=visible, ray=ray_version)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    table = markdown(rows, meta)
    (args.out / "scaling.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
