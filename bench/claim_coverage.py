"""Claim coverage: how often the speed a bundle would print holds in further fresh processes.

    PYTHONPATH=. python bench/claim_coverage.py --out OUT [--fresh NAME[,NAME...]] [--tasks DIR[,DIR...]]
        [--pairs TASK_DIR=KERNEL ...] [--search-seconds 75] [--remeasure 10] [--sources ARCHIVE]
        [--deadline 540]
    PYTHONPATH=. python bench/claim_coverage.py --out ALL --merge RUN_OUT [RUN_OUT ...] [--rebound]

Winners:
- `--fresh`: functions of bench/fresh_tasks.py extracted fresh from their releases (serving shapes in
  bench/specs/), each searched from nothing with the fusion generator alone (`kernelbot evolve
  --no-inductor-seed`: no seed file, no LLM, no Inductor code), all searches at once;
- `--tasks`: task directories searched the same way (the bundled example's tasks start from their
  candidates/, as `kernelbot target example` does);
- `--pairs`: a task and a kernel file judged as they are.
Then, per winner and one at a time: the confirmation (kernelbot.confirm.confirm, the same call as the confirm
stage of `kernelbot target`: fresh processes, GPU held, stop rule) gives the claims the body would print (per
case, regime and column: "≥ bound×"); then `--remeasure` further fresh processes per column, timed the same
way, each checked against every printed bound. A claim held in a process when that process's speedup is at
least the bound. The table: per winner, column and regime, claims held / checked; the acceptance asks for
>= 95 % in each regime. A winner this run searched also shows what its search saw at the end (its
summary.json): its best against torch.compile side by side before the final crossover, the cases behind,
and the program the final comparison shipped.

Writes OUT/claim_coverage.json (meta, the confirmations, every re-measured speedup) and OUT/claim_coverage.md
after every winner, so a run cut short by --deadline keeps what it measured. One winner's confirmation and
re-measurement take minutes on a GPU, so the acceptance's winners are usually covered by several runs;
`--merge` writes one table over the winners of several runs' OUT folders (a winner a run did not start is
left out where another run measured it); `--rebound` recomputes every bound there from the confirmations'
own per-process speedups under this checkout's stop rule (its spread floors), the table saying so. On a
machine without a GPU the confirmation runs its plumbing only (Triton's interpreter never times) and there is
nothing to cover.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Each of a search's three steps after its time limit (the drain, the final crossover, the final comparison)
# may take this long: one evaluation of a serving-size task (about 25 s for an RMSNorm's eight cases).
DRAIN_S = 40.0
SEARCH_CONFIG = f"[stop]\ndrain_timeout_s = {DRAIN_S}\n"
COVERAGE_TARGET = 0.95


def remeasure(task_dir: Path, source: str, report: Any, processes: int, backend: str) -> dict[str, Any]:
    """`processes` more fresh processes per measured column of `report`, with the GPU held; per column,
    case and regime the speedups they measured, and per process its seconds (in all, and per stage as the
    worker counted them): where a re-measurement's time goes."""
    from bench.throughput import stage_seconds
    from evaluators.config import EvalConfig
    from evaluators.pool import WorkerPool
    from evaluators.task import load_task
    from kernelbot.confirm.run import (
        PROCESSES_AT_ONCE,
        ConfirmOptions,
        confirmation_config,
        held_gpu,
        run_processes,
        workers_lock,
    )

    task = load_task(task_dir)
    measured: dict[str, dict[str, list[float]]] = {}
    failures: list[str] = []
    seconds: list[dict[str, Any]] = []
    pool = WorkerPool(backend, size=PROCESSES_AT_ONCE, config=EvalConfig())
    with pool, held_gpu(pool.backend, ConfirmOptions()) as held, workers_lock(held) as run_lock:
        for column in report.columns:
            if not column.cells:
                continue
            config = confirmation_config(
                EvalConfig(), column.baseline, caller_holds_gpu=held, run_lock=run_lock
            )
            # The processes run as the confirmation's do (several at once, each sampling alone): a process
            # takes longer from start to end than one alone, so its wall_s is the mean over the batch.
            began = time.monotonic()
            results = run_processes(pool, task, source, [config] * processes)
            per_process = (time.monotonic() - began) / max(1, processes)
            for index, result in enumerate(results):
                stages = stage_seconds(result.logs)
                seconds.append({"column": column.name, "wall_s": per_process, "stages": stages})
                if not result.passed:
                    failures.append(f"{column.name} #{index + 1}: {result.stage.value}: {result.reason}")
                    continue
                for case in result.cases:
                    for regime, t in case.timings.items():
                        key = f"{case.name}|{regime}"
                        measured.setdefault(column.name, {}).setdefault(key, []).append(t.speedup)
    return {"speedups": measured, "failures": failures, "seconds": seconds}


def process_seconds(seconds: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per column, mean seconds per re-measurement process: `wall_s` as the caller saw it, and each worker
    stage (a compile column's process also compiles the reference)."""
    from bench.throughput import mean_stage_seconds

    out: dict[str, dict[str, float]] = {}
    for column in dict.fromkeys(e["column"] for e in seconds):
        mine = [e for e in seconds if e["column"] == column]
        entry = {"processes": float(len(mine)), "wall_s": sum(e["wall_s"] for e in mine) / len(mine)}
        entry.update(mean_stage_seconds([{"stage_seconds": e["stages"]} for e in mine]))
        out[column] = entry
    return out


def coverage(report: Any, again: dict[str, Any]) -> list[dict[str, Any]]:
    """Per column, case and regime: the printed bound and how many re-measured processes reached it."""
    rows = []
    for column in report.columns:
        for cell in column.cells:
            if cell.lower is None:
                continue
            seen = again["speedups"].get(column.name, {}).get(f"{cell.case}|{cell.regime}", [])
            rows.append(
                {
                    "column": column.name,
                    "case": cell.case,
                    "regime": cell.regime,
                    "pooled": cell.pooled,
                    "bound": cell.lower,
                    "verdict": cell.verdict,
                    "processes": cell.processes,
                    "cv": cell.cv,
                    "remeasured": seen,
                    "held": sum(1 for s in seen if s >= cell.lower),
                }
            )
    return rows


def summary(winners: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Claims held / checked per regime over every winner and column."""
    out: dict[str, dict[str, Any]] = {}
    for winner in winners:
        for row in winner.get("coverage", []):
            entry = out.setdefault(row["regime"], {"held": 0, "checked": 0})
            entry["held"] += row["held"]
            entry["checked"] += len(row["remeasured"])
    for entry in out.values():
        entry["fraction"] = entry["held"] / entry["checked"] if entry["checked"] else None
        entry["met"] = entry["fraction"] is not None and entry["fraction"] >= COVERAGE_TARGET
    return out


def merge(outs: list[Path], rule: Any = None) -> dict[str, Any]:
    """The winners and metas of several runs' OUT folders as one result (see the module docstring); with a
    stop rule, every bound recomputed under it (rebound)."""
    runs = [json.loads((out / "claim_coverage.json").read_text()) for out in outs]
    measured = {w["name"] for run in runs for w in run["winners"] if w.get("coverage")}
    winners = [w for run in runs for w in run["winners"] if w.get("coverage") or w["name"] not in measured]
    metas = [run["meta"] for run in runs]
    first = metas[0] if metas else {}
    meta = {key: first.get(key, "?") for key in ("device", "torch", "triton", "python")}
    meta["date"] = ", ".join(m.get("date", "") for m in metas)
    meta["command"] = "; ".join(m.get("command", "") for m in metas)
    if rule is not None:
        winners = [rebound(w, rule) for w in winners]
        meta["rebound"] = (
            "bounds recomputed from each confirmation's per-process speedups under the stop rule of "
            f"this checkout (spread floor: graph {100 * rule.graph_spread_floor:g} %, wall "
            f"{100 * rule.wall_spread_floor:g} %); the processes are those the runs measured"
        )
    return {"meta": meta, "runs": metas, "winners": winners, "summary": summary(winners)}


def rebound(winner: dict[str, Any], rule: Any) -> dict[str, Any]:
    """`winner` with every printed bound recomputed under `rule` from its confirmation's own per-process
    speedups (the processes are those measured; only the bound's arithmetic is today's), and each
    re-measured process checked against the new bound."""
    from kernelbot.confirm.stoprule import estimate, final

    confirmed = {
        (column["name"], cell["case"], cell["regime"]): cell["speedups"]
        for column in (winner.get("confirm") or {}).get("columns", [])
        for cell in column.get("cells", [])
    }
    rows = []
    for row in winner.get("coverage", []):
        speedups = confirmed.get((row["column"], row["case"], row["regime"]))
        if not speedups or len(speedups) < 2:
            rows.append(row)
            continue
        cell = final(estimate(speedups, rule, regime=row["regime"]))
        held = sum(1 for s in row["remeasured"] if s >= cell.lower)
        rows.append({**row, "bound": cell.lower, "verdict": cell.verdict, "held": held})
    return {**winner, "coverage": rows}


def by_column_and_regime(winner: dict[str, Any]) -> list[tuple[tuple[str, str], list[dict[str, Any]]]]:
    """A winner's coverage rows grouped per (column, regime), in that order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in winner.get("coverage", []):
        groups.setdefault((row["column"], row["regime"]), []).append(row)
    return sorted(groups.items())


def stability_table(winners: list[dict[str, Any]]) -> list[str]:
    """The re-measurements read as a stability table of real kernels: per winner, column and regime, the
    cross-process coefficient of variation of the speedup over its fresh processes, median and worst case."""
    from bench.stability_report import cross_cv

    lines = [
        "",
        "| winner | column | regime | cases | fresh processes a case | median CV | worst CV |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    rows = 0
    for winner in winners:
        for (column, regime), group in by_column_and_regime(winner):
            cvs = sorted(c for c in (cross_cv(r["remeasured"]) for r in group) if math.isfinite(c))
            if not cvs:
                continue
            counts = sorted({len(r["remeasured"]) for r in group})
            processes = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
            lines.append(
                f"| {winner['name']} | {column} | {regime} | {len(group)} | {processes} | "
                f"{100 * statistics.median(cvs):.2f} % | {100 * cvs[-1]:.2f} % |"
            )
            rows += 1
    return lines if rows else []


def bounds_table(winners: list[dict[str, Any]]) -> list[str]:
    """The confirmed claims themselves, per winner, column and regime: how many cases, the lowest bound
    (and its case) and how many cases' bounds lie below 1 -- what a run with no re-measurement shows, and
    the readable acceptance's "never behind torch.compile" (every compile bound at or above 1). Beside it,
    how many of those cases are below 1 pooled: a bound below 1 over a pooled figure above it is a case at
    parity or a lead the processes cannot confirm, not one measured behind. And how many are below 1 in
    some process: a bound below 1 with every process ahead is a lead smaller than the stop rule's spread
    floor lets a bound confirm (with 10 processes and the graph regime's 1 %, about 2.4 %)."""
    lines = [
        "",
        "| winner | column | regime | cases | lowest bound (case) | pooled | bounds below 1 "
        "| pooled below 1 | below 1 in a process |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    rows = 0
    for winner in winners:
        for column in (winner.get("confirm") or {}).get("columns", []):
            regimes: dict[str, list[dict[str, Any]]] = {}
            for cell in column.get("cells", []):
                if cell.get("lower") is not None:
                    regimes.setdefault(cell["regime"], []).append(cell)
            for regime, cells in sorted(regimes.items()):
                lowest = min(cells, key=lambda c: c["lower"])
                pooled = sorted(c["pooled"] for c in cells)
                below = sum(1 for c in cells if c["lower"] < 1.0)
                pooled_below = sum(1 for value in pooled if value < 1.0)
                in_a_process = sum(1 for c in cells if min(c["speedups"]) < 1.0)
                lines.append(
                    f"| {winner['name']} | {column['name']} | {regime} | {len(cells)} | "
                    f"{lowest['lower']:.3f}x ({lowest['case']}) | {pooled[0]:.2f}-{pooled[-1]:.2f}x | "
                    f"{below} | {pooled_below} | {in_a_process} |"
                )
                rows += 1
    return lines if rows else []


def search_table(winners: list[dict[str, Any]]) -> list[str]:
    """What each search itself saw at its end (its summary.json): the best against torch.compile side by
    side before the final crossover, the cases behind, and the program the final comparison shipped."""
    lines = [
        "",
        "| winner | search's best vs compile, one worker (before the final crossover) | behind | shipped |",
        "| --- | --- | --- | --- |",
    ]
    rows = 0
    for winner in winners:
        search = winner.get("search")
        if not search:
            continue
        check = search.get("compile_check") or {}
        figures = ", ".join(f"{c} {v:.3f}x" for c, v in (check.get("speedups") or {}).items())
        final = search.get("final_comparison") or {}
        shipped = f"{final['winner']} over {final['pick']}" if final.get("winner") else "the pick"
        lines.append(
            f"| {winner['name']} | {figures or check.get('reason') or 'not run'} | "
            f"{', '.join(check.get('behind') or []) or '–'} | {shipped} |"
        )
        rows += 1
    return lines if rows else []


def search_record(run_dir: Path) -> dict[str, Any] | None:
    """The parts of a search's summary.json the report shows (search_table), None without one."""
    from evolution.summary import SUMMARY_JSON

    path = run_dir / SUMMARY_JSON
    if not path.is_file():
        return None
    summary = json.loads(path.read_text())
    return {key: summary.get(key) for key in ("compile_check", "final_comparison")}


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    lines = [
        f"Claim coverage on {meta.get('device', '?')} (torch {meta.get('torch', '?')}, triton "
        f"{meta.get('triton', '?')}), {meta.get('date', '')}, `{meta.get('command', '')}`",
        "",
        "| winner | column | regime | claims (case-regime) | held / re-measured | coverage | worst CV |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    if meta.get("rebound"):
        lines[1:1] = ["", f"Rebound: {meta['rebound']}."]
    for winner in data["winners"]:
        groups = by_column_and_regime(winner)
        if not groups:
            lines.append(f"| {winner['name']} | – | – | 0 | – | – | {winner.get('why', '')} |")
        for (column, regime), rows in groups:
            held = sum(r["held"] for r in rows)
            seen = sum(len(r["remeasured"]) for r in rows)
            worst = max((r["cv"] or 0.0 for r in rows), default=0.0)
            share = f"{100 * held / seen:.1f} %" if seen else "–"
            lines.append(
                f"| {winner['name']} | {column} | {regime} | {len(rows)} | {held} / {seen} | {share} | "
                f"{100 * worst:.2f} % |"
            )
    for winner in data["winners"]:
        per_column = winner.get("remeasure_seconds") or {}
        if "wall_s" in per_column:  # a run before the seconds were kept per column: one mean over all
            per_column = {"all columns": per_column}
        for column, spent in per_column.items():
            stages = ", ".join(f"{k} {v:.2f}" for k, v in spent.items() if k not in ("processes", "wall_s"))
            lines.append(
                f"\n{winner['name']}, {column}: {spent['wall_s']:.1f} s a re-measurement process on average "
                f"over {spent['processes']:.0f} (worker stages, s: {stages or 'not reported'})"
            )
    lines += bounds_table(data["winners"])
    lines += search_table(data["winners"])
    lines += stability_table(data["winners"])
    lines += ["", "| regime | held / re-measured | coverage | target |", "| --- | --- | --- | --- |"]
    for regime, entry in sorted(data["summary"].items()):
        share = "–" if entry["fraction"] is None else f"{100 * entry['fraction']:.1f} %"
        met = "met" if entry["met"] else "not met"
        lines.append(f"| {regime} | {entry['held']} / {entry['checked']} | {share} | >= 95 % ({met}) |")
    return "\n".join(lines) + "\n"


def search_winners(names: list[str], task_dirs: list[Path], work: Path, args: Any) -> dict[str, Path]:
    """Fresh tasks extracted, then every task searched at once with the fusion generator alone (with
    `--inductor-seed`, torch.compile's code seeded beside it, as `kernelbot target` does); the task
    directories whose search left a best.py, by name."""
    from bench.llm_free_acceptance import extract_all, run_all, unpack_sources

    tasks_dir, runs_dir, logs = work / "tasks", work / "runs", work / "logs"
    for d in (tasks_dir, runs_dir, logs):
        d.mkdir(parents=True, exist_ok=True)
    dirs = {d.name: d for d in task_dirs}
    if names:
        print(unpack_sources(args.sources), flush=True)
        fresh = extract_all(tasks_dir, names, args.specs, "cuda")
        dirs.update({n: tasks_dir / n for n, rec in fresh.items() if rec.get("ok")})
        for n, rec in fresh.items():
            if not rec.get("ok"):
                print(f"{n}: not extracted: {rec.get('error') or rec.get('probe')}", flush=True)
    from bench.engine_width import search_config

    configs = {n: search_config(work, n, d, SEARCH_CONFIG, args.line_length) for n, d in dirs.items()}
    evolve = {
        n: [sys.executable, "-m", "kernelbot.cli", "evolve", str(d), "--out", str(runs_dir / n),
            "--time-limit", f"{args.search_seconds}s", "--iterations", "100000", "--workers-per-device",
            str(args.workers), "--config", str(configs[n])]
            + ([] if args.inductor_seed else ["--no-inductor-seed"])
        for n, d in dirs.items()
    }  # fmt: skip
    run_all(evolve, logs, "evolve", args.search_seconds + 3 * DRAIN_S + 30)
    return {n: d for n, d in dirs.items() if (runs_dir / n / "best.py").is_file()}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench/claim_coverage.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--fresh", default="", metavar="NAME[,NAME...]", help="bench/fresh_tasks.py names")
    parser.add_argument("--tasks", default="", metavar="DIR[,DIR...]", help="task directories to search")
    parser.add_argument("--pairs", nargs="*", default=[], metavar="TASK_DIR=KERNEL")
    parser.add_argument("--search-seconds", type=int, default=75)
    parser.add_argument("--workers", type=int, default=2, help="evaluation workers per search")
    parser.add_argument(
        "--line-length",
        default="engine",
        help="the width the fusion generator writes at: `engine` (each task's engine's, as `kernelbot "
        "target` searches) or a number",
    )
    parser.add_argument(
        "--inductor-seed",
        action="store_true",
        help="seed the searches with torch.compile's code too (kernelbot target's default)",
    )
    parser.add_argument("--remeasure", type=int, default=10, help="further fresh processes per column")
    parser.add_argument("--min-processes", type=int, default=3)
    parser.add_argument("--max-processes", type=int, default=6)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--sources", type=Path, default=ROOT / ".devsite" / "sources.tar.xz")
    parser.add_argument("--specs", type=Path, default=ROOT / "bench" / "specs")
    parser.add_argument("--deadline", type=float, default=540.0, help="start no winner after this many s")
    parser.add_argument(
        "--merge", nargs="+", type=Path, default=[], metavar="RUN_OUT", help="one table over these runs' OUT"
    )
    parser.add_argument(
        "--rebound",
        action="store_true",
        help="with --merge: recompute every bound from the confirmations' speedups under today's stop rule",
    )
    return parser


def write(out: Path, data: dict[str, Any]) -> str:
    """OUT/claim_coverage.json and .md; returns the table."""
    table = markdown(data)
    out.mkdir(parents=True, exist_ok=True)
    (out / "claim_coverage.json").write_text(json.dumps(data, indent=2, default=str))
    (out / "claim_coverage.md").write_text(table)
    return table


def verdict(data: dict[str, Any]) -> int:
    """0 when every regime's coverage meets the target (and there is one), else 1."""
    return 0 if data["summary"] and all(entry["met"] for entry in data["summary"].values()) else 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from bench.fresh_tasks import FRESH_TASKS
    from bench.meta import run_meta
    from kernelbot.confirm import ConfirmOptions, StopRule, confirm

    started = time.monotonic()
    if args.merge:
        missing_runs = [str(out) for out in args.merge if not (out / "claim_coverage.json").is_file()]
        if missing_runs:
            print(f"error: --merge: no claim_coverage.json in {missing_runs}", file=sys.stderr)
            return 2
        merged = merge(args.merge, StopRule(args.min_processes, args.max_processes) if args.rebound else None)
        print(write(args.out, merged), flush=True)
        return verdict(merged)
    names = [n.strip() for n in args.fresh.split(",") if n.strip()]
    unknown = sorted(set(names) - {t.name for t in FRESH_TASKS})
    if unknown:
        print(f"error: --fresh: unknown {unknown} (bench/fresh_tasks.py names them)", file=sys.stderr)
        return 2
    pairs: dict[str, tuple[Path, Path]] = {}
    for item in args.pairs:
        task, sep, kernel = item.partition("=")
        if not sep or not Path(task).is_dir() or not Path(kernel).is_file():
            print(
                f"error: --pairs expects TASK_DIR=KERNEL_FILE, both existing; got {item!r}", file=sys.stderr
            )
            return 2
        pairs[Path(task).name] = (Path(task), Path(kernel))
    task_dirs = [Path(d.strip()) for d in args.tasks.split(",") if d.strip()]
    missing = [str(d) for d in task_dirs if not (d / "task.toml").is_file()]
    if missing:
        print(f"error: --tasks: no task.toml in {missing}", file=sys.stderr)
        return 2
    work = args.out / "work"
    searched = [*names, *(d.name for d in task_dirs)]
    earlier = [n for n in searched if (work / "runs" / n).exists()]
    if earlier:  # `kernelbot evolve` refuses it, and the earlier search's best.py would be confirmed instead
        print(
            f"error: {work / 'runs'} holds an earlier search of {', '.join(earlier)}; give another --out",
            file=sys.stderr,
        )
        return 2
    os.environ.setdefault("KERNELBOT_CACHE", str(work / "cache"))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    if names or task_dirs:
        for n, d in search_winners(names, task_dirs, work, args).items():
            pairs[n] = (d, work / "runs" / n / "best.py")
    rule = StopRule(args.min_processes, args.max_processes)
    meta = run_meta()
    data: dict[str, Any] = {"meta": meta, "rule": asdict(rule), "winners": [], "summary": {}}
    for name, (task_dir, kernel) in pairs.items():
        if time.monotonic() - started > args.deadline:
            data["winners"].append({"name": name, "why": "not started: the deadline had passed"})
            continue
        source = kernel.read_text()
        options = ConfirmOptions(rule=rule, backend=args.backend)
        report = confirm(task_dir, source, options, progress=lambda m, n=name: print(f"{n}: {m}", flush=True))
        winner: dict[str, Any] = {"name": name, "task_dir": str(task_dir), "kernel": str(kernel)}
        if (search := search_record(work / "runs" / name)) is not None:
            winner["search"] = search
        winner["confirm"] = report.to_dict()
        if report.measured and args.remeasure > 0:
            again = remeasure(task_dir, source, report, args.remeasure, report.backend)
            winner["remeasure_failures"] = again["failures"]
            winner["remeasure_seconds"] = process_seconds(again["seconds"])
            winner["coverage"] = coverage(report, again)
        elif not report.measured:
            winner["why"] = report.reason
        else:
            winner["why"] = "confirmed, not re-measured: its bounds are in the table below"
        data["winners"].append(winner)
        data["summary"] = summary(data["winners"])
        write(args.out, data)
    print(write(args.out, data), flush=True)
    return verdict(data)


if __name__ == "__main__":
    sys.exit(main())
