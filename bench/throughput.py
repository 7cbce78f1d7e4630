"""Candidates fully evaluated per GPU-minute on the example tasks, through the real WorkerPool.

For every task under --tasks (default examples/tasks/*) the candidates shipped in its candidates/ folder
and --variants mutations of each (one tuning constant halved or doubled inside the EVOLVE-BLOCK, the kind of
edit the search makes without an LLM) are evaluated --rounds times, all submitted at once to one WorkerPool
of --workers warm workers on one GPU. The clock starts once the pool's workers are warm and stops when the
last verdict is back; "fully evaluated" means the cascade ran to its end (the timing stage completed and
the result passed). Verdicts of every kind are counted too, by stage.

Run from the repository root on the GPU machine:
    PYTHONPATH=. python bench/throughput.py --out bench-out/throughput
writes throughput.json and throughput.md to --out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.config_overrides import add_set_option, eval_config
from bench.lock_timeline import timeline
from bench.meta import run_meta

DEFAULT_TASKS = Path(__file__).resolve().parent.parent / "examples" / "tasks"
TARGET_PER_MINUTE = 60.0

# Tuning constants the search mutates: a power of two assigned to a block size / warp / stage count.
_TUNABLE = re.compile(
    r"(?P<name>\b(?:\w*(?:BLOCK|block)\w*|num_warps|num_stages|\w*_SIZE)\s*=\s*(?:min\(\s*)?)(?P<value>\d+)\b"
)


@dataclass(frozen=True)
class Submission:
    task: Path
    label: str  # "<task>/<candidate file>[~variant]"
    source: str


def tunable_constants(block: str) -> list[re.Match[str]]:
    return [m for m in _TUNABLE.finditer(block) if _is_power_of_two(int(m.group("value")))]


def _is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def make_variants(source: str, limit: int) -> list[tuple[str, str]]:
    """Up to `limit` (label, source) variants, each changing one tuning constant in the EVOLVE-BLOCK."""
    from evaluators.candidate import find_evolve_block, replace_evolve_block

    block = find_evolve_block(source)
    if block is None or limit <= 0:
        return []
    out: list[tuple[str, str]] = []
    for match in tunable_constants(block.text):
        value = int(match.group("value"))
        for new in (value * 2, value // 2):
            if new < 1 or len(out) >= limit:
                continue
            text = block.text[: match.start("value")] + str(new) + block.text[match.end("value") :]
            name = match.group("name").split("=")[0].strip()
            out.append((f"{name}={new}", replace_evolve_block(source, text)))
    return out[:limit]


def collect(tasks_dir: Path, variants: int, rounds: int) -> list[Submission]:
    subs: list[Submission] = []
    for task in sorted(p for p in tasks_dir.iterdir() if (p / "task.toml").is_file()):
        for cand in sorted((task / "candidates").glob("*.py")):
            source = cand.read_text()
            label = f"{task.name}/{cand.name}"
            subs.append(Submission(task, label, source))
            subs.extend(Submission(task, f"{label}~{v}", text) for v, text in make_variants(source, variants))
    return [s for _ in range(rounds) for s in subs]


def stage_seconds(logs: str) -> dict[str, float]:
    """The worker's per-stage seconds (the cascade prints them last: evaluators.pipeline)."""
    from evaluators.pipeline import STAGE_SECONDS_TAG

    for line in reversed(logs.splitlines()):
        if line.startswith(STAGE_SECONDS_TAG):
            try:
                return {k: float(v) for k, v in json.loads(line[len(STAGE_SECONDS_TAG) :]).items()}
            except (ValueError, AttributeError):
                return {}
    return {}


def mean_stage_seconds(results: list[dict[str, Any]]) -> dict[str, float]:
    """Mean seconds per stage over the results that report them. `timing` is the whole stage; within it the
    GPU lock is waited for (`wait_lock`) and held (`locked`) once per case and regime."""
    reported = [r["stage_seconds"] for r in results if r.get("stage_seconds")]
    names = dict.fromkeys(k for seconds in reported for k in seconds)
    return {k: sum(s.get(k, 0.0) for s in reported) / len(reported) for k in names} if reported else {}


def summarize(results: list[dict[str, Any]], elapsed_s: float) -> dict[str, Any]:
    """Rates per minute of wall time on the one GPU (the pool's only device)."""
    full = [r for r in results if r["passed"] and r["stage"] == "timing"]
    minutes = elapsed_s / 60.0 if elapsed_s > 0 else float("nan")
    locked = sum(r.get("stage_seconds", {}).get("locked", 0.0) for r in results)
    return {
        "evaluations": len(results),
        "fully_evaluated": len(full),
        "elapsed_s": elapsed_s,
        "fully_evaluated_per_gpu_minute": len(full) / minutes,
        "verdicts_per_gpu_minute": len(results) / minutes,
        "by_stage": dict(Counter(f"{r['stage']}:{'pass' if r['passed'] else 'fail'}" for r in results)),
        "mean_duration_s": sum(r["duration_s"] for r in results) / len(results) if results else 0.0,
        "meets_target": len(full) / minutes >= TARGET_PER_MINUTE,
        "mean_stage_seconds": mean_stage_seconds(results),
        # Share of the run with the GPU lock held: near 1, more workers cannot help
        "lock_busy": locked / elapsed_s if elapsed_s > 0 else float("nan"),
        # ...and where its idle time lies (the middle of the run, gaps between holders)
        "lock_timeline": timeline(line for r in results for line in r.get("timed", [])),
    }


def _timeline_note(tl: dict[str, Any]) -> str:
    if not tl:
        return ""
    return (
        f", {tl['busy_middle']:.0%} in the middle 80 % of the span of its {tl['holds']} holds; "
        f"{tl['gaps_over_5ms']} gaps over 5 ms between holders, {tl['gaps_over_5ms_s']:.1f} s in all "
        f"(median gap {tl['gap_ms_median']:.2f} ms)"
        + (
            f"; {tl['mean_waiting']:.1f} workers waiting on average, lock free for "
            f"{tl['idle_while_asked_s']:.2f} s while one was"
            if not math.isnan(tl.get("mean_waiting", math.nan))
            else ""
        )
    )


def markdown(summary: dict[str, Any], meta: dict[str, Any], per_task: dict[str, dict[str, Any]]) -> str:
    lines = [
        "# Evaluation throughput",
        "",
        f"- GPU: {meta.get('device', '?')}; torch {meta.get('torch', '?')}, "
        f"triton {meta.get('triton', '?')}, Python {meta.get('python', '?')}; {meta.get('workers')} workers",
        f"- date: {meta.get('date', '?')}; command: `{meta.get('command', '?')}`",
        f"- target: >= {TARGET_PER_MINUTE:g} candidates fully evaluated per GPU-minute",
        f"- pool warm-up (not counted): {meta.get('pool_warmup_s', 0):.1f} s",
        "",
        "| evaluations | fully evaluated | wall time (s) | fully evaluated / GPU-min | verdicts / GPU-min "
        "| mean per-candidate latency (s) |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| {summary['evaluations']} | {summary['fully_evaluated']} | {summary['elapsed_s']:.1f} | "
        f"{summary['fully_evaluated_per_gpu_minute']:.1f} | {summary['verdicts_per_gpu_minute']:.1f} | "
        f"{summary['mean_duration_s']:.2f} |",
        "",
        "Mean seconds per stage in a worker (`timing` includes `wait_lock`, the waits for the GPU lock, and "
        "`locked`, the sampling done holding it): "
        + ", ".join(f"{k} {v:.2f}" for k, v in summary.get("mean_stage_seconds", {}).items())
        + f"; GPU lock held {summary.get('lock_busy', float('nan')):.0%} of the run"
        + _timeline_note(summary.get("lock_timeline") or {}),
        "",
        "| task | evaluations | fully evaluated | verdicts by stage |",
        "| --- | --- | --- | --- |",
    ]
    for task, row in per_task.items():
        stages = ", ".join(f"{k} {v}" for k, v in sorted(row["by_stage"].items()))
        lines.append(f"| {task} | {row['evaluations']} | {row['fully_evaluated']} | {stages} |")
    return "\n".join(lines) + "\n"


async def _evaluate_all(pool: Any, subs: list[Submission]) -> list[dict[str, Any]]:
    async def one(sub: Submission) -> dict[str, Any]:
        start = time.perf_counter()
        result = await pool.evaluate_async(sub.task, sub.source)
        return {
            "task": sub.task.name,
            "label": sub.label,
            "stage": result.stage.value,
            "passed": result.passed,
            "score": result.score,
            "speedup": result.speedup,
            "reason": result.reason[:300],
            "duration_s": time.perf_counter() - start,
            "stage_seconds": stage_seconds(result.logs),
            # One line per case and regime: pairs taken, why sampling stopped, time with set-up.
            "timed": [line for line in result.logs.splitlines() if line.startswith("timed ")],
        }

    return list(await asyncio.gather(*(one(s) for s in subs)))


def _warm_pool(pool: Any, first: Submission, settle_s: float) -> None:
    """One evaluation end to end (a worker had to be warm for it), then time for the others to warm up."""
    pool.evaluate(first.task, first.source)
    time.sleep(settle_s)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/throughput.py",
        description="Candidates fully evaluated per GPU-minute on the example tasks (real WorkerPool).",
    )
    parser.add_argument("--out", type=Path, help="directory for throughput.json and throughput.md")
    parser.add_argument("--tasks", type=Path, default=DEFAULT_TASKS, help="folder of task directories")
    parser.add_argument("--workers", type=int, default=8, help="WorkerPool size (default 8)")
    parser.add_argument("--variants", type=int, default=6, help="mutated variants per shipped candidate")
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="times the whole list is submitted (later rounds hit Triton's cache)",
    )
    parser.add_argument("--backend", default="auto", help="evaluator backend (default auto)")
    parser.add_argument(
        "--settle", type=float, default=10.0, help="seconds to let workers warm up before the clock starts"
    )
    add_set_option(parser, "timing.secondary_time_cap_s=0.02")
    parser.add_argument("--dry-run", action="store_true", help="list the submissions; evaluate nothing")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.tasks.is_dir():
        print(f"error: --tasks {args.tasks} is not a folder of task directories", file=sys.stderr)
        return 2
    try:
        overrides, config = eval_config(args.overrides)
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    subs = collect(args.tasks, args.variants, args.rounds)
    if not subs:
        print(f"error: no candidates under {args.tasks}/*/candidates/", file=sys.stderr)
        return 2
    if args.dry_run:
        for sub in subs:
            print(sub.label)
        print(f"{len(subs)} submissions")
        return 0
    if args.out is None:
        print("error: --out DIR is required", file=sys.stderr)
        return 2

    from evaluators.pool import WorkerPool

    started = time.perf_counter()
    with WorkerPool(args.backend, size=args.workers, config=config) as pool:
        _warm_pool(pool, subs[0], args.settle)
        warm_s = time.perf_counter() - started
        t0 = time.perf_counter()
        results = asyncio.run(_evaluate_all(pool, subs))
        elapsed = time.perf_counter() - t0
        backend = pool.backend_name
    summary = summarize(results, elapsed)
    per_task = {}
    for task in dict.fromkeys(r["task"] for r in results):
        mine = [r for r in results if r["task"] == task]
        per_task[task] = {**summarize(mine, elapsed), "evaluations": len(mine)}
    meta = run_meta(backend=backend, workers=args.workers, pool_warmup_s=warm_s, overrides=overrides)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "throughput.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "per_task": per_task, "results": results}, indent=2)
    )
    table = markdown(summary, meta, per_task)
    (args.out / "throughput.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
