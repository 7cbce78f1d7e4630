"""The wall regime under a search's load: how wide a wall task's per-case intervals are while a search keeps
every worker busy, and how far one candidate's wall speedup moves from one fresh process to the next there.

A real search (`kernelbot evolve TASK --workers-per-device W`, no LLM) is the load. Once its pool has warmed
up, one candidate (by default the task's first hand-written one) is judged N times, each in a fresh process
with its own one-worker pool (evaluators.api.evaluate_candidate), all at once (--sequential: one after
another, which takes minutes: the GPU lock is a flock, not a queue, and each waits among 12), competing for
the GPU lock with the search's workers. When they are done and the search ran at least --search-s, the
search is stopped and its best read from its run store. Reported: the best's per-case wall speedup, 95 % CI,
half-width and claimable lower bound; the N re-evaluations' wall speedups (aggregate and per case), their
spread (max / min - 1), and whether the search was running throughout each. Targets (docs/benchmarks.md):
half-widths <= 3 %, spread <= 2 %.

    PYTHONPATH=. python bench/wall_load.py --out bench-out/wall-load        # on the GPU machine
writes wall_load.json and wall_load.md to --out, the search's run under --out/run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from evaluators.subprocesses import Started

try:
    from bench.config_overrides import add_set_option, eval_config
    from bench.meta import run_meta
except ModuleNotFoundError:  # run as `python bench/wall_load.py` without PYTHONPATH=.
    from config_overrides import add_set_option, eval_config  # type: ignore[no-redef]
    from meta import run_meta  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
RESULT_PREFIX = "KB_WALL_LOAD_RESULT "
HALF_WIDTH_TARGET = 0.03
SPREAD_TARGET = 0.02


def half_width(timing: dict[str, Any] | None) -> float:
    if not timing or not timing.get("ci"):
        return math.nan
    speedup, (lo, hi) = float(timing["speedup"]), timing["ci"]
    if not (speedup > 0 and math.isfinite(speedup)):
        return math.nan
    return max(speedup - float(lo), float(hi) - speedup) / speedup


def spread(values: list[float]) -> float:
    """max / min - 1 of positive values (nan for fewer than two)."""
    usable = [v for v in values if v > 0 and math.isfinite(v)]
    return max(usable) / min(usable) - 1.0 if len(usable) >= 2 else math.nan


def case_walls(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """EvalResult dict -> per case: wall speedup, ci, claim_low, hidden."""
    out = {}
    for case in result.get("cases", []):
        wall = (case.get("timings") or {}).get("wall")
        if wall:
            out[case["name"]] = {
                "speedup": wall["speedup"],
                "ci": [wall["ci_low"], wall["ci_high"]],
                "claim_low": wall.get("claim_low"),
                "hidden": case.get("hidden", False),
            }
    return out


def best_of_run(run_dir: Path) -> dict[str, Any] | None:
    """The search's best (evolution.summary.program_summary) read from its store; None when nothing passed."""
    from evolution.store import RunStore
    from evolution.summary import best_program, program_summary

    with RunStore.open(run_dir, readonly=True) as store:
        best = best_program(store)
        summary = program_summary(best) if best is not None else None
        if summary is not None:
            summary["evaluations_in_run"] = store.evaluation_count()
            assert best is not None and best.result is not None
            summary["wall_cases"] = case_walls(best.result.to_dict())
    return summary


# --- the report (pure) -------------------------------------------------------------------------------------


def report(
    best: dict[str, Any] | None, reevals: list[dict[str, Any]], meta: dict[str, Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {"meta": meta, "best": best, "reevaluations": reevals}
    if best is not None:
        widths = {name: half_width(t) for name, t in best["wall_cases"].items()}
        finite = [w for w in widths.values() if math.isfinite(w)]
        out["best_max_half_width"] = max(finite) if len(finite) == len(widths) and finite else math.inf
        out["best_half_widths"] = widths
    speedups = [r["speedup"] for r in reevals if r.get("speedup")]
    out["reeval_spread"] = spread(speedups)
    names = list(dict.fromkeys(n for r in reevals for n in r.get("wall_cases", {})))
    out["reeval_case_spread"] = {
        n: spread([r["wall_cases"][n]["speedup"] for r in reevals if n in r.get("wall_cases", {})])
        for n in names
    }
    return out


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:.2f} %"


def _verdict(value: float, target: float) -> str:
    return "n/a" if not math.isfinite(value) else ("met" if value <= target else "NOT met")


def markdown(data: dict[str, Any]) -> str:
    meta, best, reevals = data["meta"], data["best"], data["reevaluations"]
    lines = [
        "# Wall regime under a search's load",
        "",
        f"- GPU: {meta.get('device', '?')}; torch {meta.get('torch', '?')}, triton {meta.get('triton', '?')}",
        f"- date: {meta.get('date', '?')}; command: `{meta.get('command', '?')}`",
        f"- load: `{meta.get('load', '?')}`, ran {meta.get('search_s', '?')} s",
        "",
    ]
    if best is None:
        lines.append("The search found no correct candidate.")
    else:
        worst = data["best_max_half_width"]
        lines += [
            f"**Best** {best['program_id']} ({best['operator']}), score {best['score']:.4f}, of "
            f"{best.get('evaluations_in_run', '?')} evaluations. Largest per-case wall CI half-width: "
            f"{_pct(worst)} (target <= {_pct(HALF_WIDTH_TARGET)}: {_verdict(worst, HALF_WIDTH_TARGET)}).",
            "",
            "| case | wall speedup | 95 % CI | half-width | claim (lower bound) |",
            "| --- | --- | --- | --- | --- |",
        ]
        for name, t in best["wall_cases"].items():
            claim = f"{t['claim_low']:.3f}" if t.get("claim_low") else "-"
            hidden = " (hidden)" if t.get("hidden") else ""
            lines.append(
                f"| {name}{hidden} | {t['speedup']:.3f} | [{t['ci'][0]:.3f}, {t['ci'][1]:.3f}] | "
                f"{_pct(half_width(t))} | {claim} |"
            )
    under = sum(1 for r in reevals if r.get("under_load"))
    values = ", ".join(f"{r['speedup']:.4f}" if r.get("speedup") else "failed" for r in reevals)
    lines += [
        "",
        f"**Re-evaluations** of `{meta.get('candidate', '?')}` in {len(reevals)} fresh processes "
        f"({under} with the search running throughout): wall speedups {values}; "
        f"spread {_pct(data['reeval_spread'])} "
        f"(target <= {_pct(SPREAD_TARGET)}: {_verdict(data['reeval_spread'], SPREAD_TARGET)}).",
        "",
        "| case | speedups | spread | largest half-width |",
        "| --- | --- | --- | --- |",
    ]
    for name, case_spread in data["reeval_case_spread"].items():
        runs = [r["wall_cases"][name] for r in reevals if name in r.get("wall_cases", {})]
        widths = [half_width(t) for t in runs]
        widest = max(widths) if widths and all(math.isfinite(w) for w in widths) else math.inf
        shown = ", ".join(f"{t['speedup']:.3f}" for t in runs)
        lines.append(f"| {name} | {shown} | {_pct(case_spread)} | {_pct(widest)} |")
    return "\n".join(lines) + "\n"


# --- one re-evaluation (child process) ---------------------------------------------------------------------


def run_child(task_dir: Path, candidate: Path, overrides: list[str]) -> dict[str, Any]:
    from evaluators.api import evaluate_candidate

    _, config = eval_config(overrides)
    result = evaluate_candidate(task_dir, candidate.read_text(), config).to_dict()
    return {
        "passed": result["passed"],
        "reason": result["reason"].splitlines()[0] if result["reason"] else "",
        "speedup": result["speedup"] if result["regime"] == "wall" else None,
        "score": result["score"],
        "wall_cases": case_walls(result),
        "duration_s": result["duration_s"],
    }


# --- driver ------------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def load_command(args: argparse.Namespace, run_dir: Path) -> list[str]:
    """The search that is the load; it may run until the re-evaluations are done (then it is stopped)."""
    limit = args.search_s + (args.reevals if args.sequential else 1) * args.child_timeout
    cmd = [sys.executable, "-m", "kernelbot.cli", "evolve", str(args.task), "--iterations", "100000"]
    cmd += ["--time-limit", f"{limit:g}s", "--out", str(run_dir), "--workers-per-device", str(args.workers)]
    return [*cmd, "--json"]


def child_command(args: argparse.Namespace) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(args.task), str(args.candidate)]
    for item in args.overrides:
        cmd += ["--set", item]
    return cmd


def reevaluate(args: argparse.Namespace, indices: list[int], load: Started) -> list[dict[str, Any]]:
    """Fresh-process re-evaluations, started together (each its own process and one-worker pool: they queue
    for the GPU lock with the search's workers); each row says whether the search ran throughout it."""
    running_before = load.poll() is None
    children = [
        Started(child_command(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        for _ in indices
    ]
    deadline = time.monotonic() + args.child_timeout
    rows = []
    try:
        for i, child in zip(indices, children, strict=True):
            stdout, stderr, timed_out = child.communicate(None, max(0.0, deadline - time.monotonic()))
            child.reap()
            if timed_out:
                rows.append({"index": i, "error": f"ran past {args.child_timeout:g} s"})
                continue
            row = _parse(stdout) if child.popen.returncode == 0 else None
            if row is None:
                rows.append({"index": i, "error": f"exit {child.popen.returncode}: {stderr[-2000:]}"})
                continue
            row.update(index=i, under_load=running_before and load.poll() is None)
            rows.append(row)
            print(
                f"[{i + 1}/{args.reevals}] wall speedup {row['speedup']}, under load {row['under_load']}",
                flush=True,
            )
    finally:  # Ctrl-C or an error here: no re-evaluation outlives the bench
        for child in children:
            if child.popen.returncode is None:
                child.stop()
    return rows


def drive(args: argparse.Namespace) -> int:
    # A time limit (bench/run.sh's `timeout`) sends SIGTERM: leave through `finally`, which stops the search.
    # The caller's handler comes back after (a test calling this in pytest's own process keeps its own).
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return _drive(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _drive(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    run_dir = out / "run"
    started = time.monotonic()
    with open(out / "evolve.log", "wb") as log, open(out / "evolve.json", "wb") as summary:
        load = Started(load_command(args, run_dir), stdout=summary, stderr=log, env=_env(), cwd=REPO)
        try:
            time.sleep(args.reeval_delay)
            batches = [[i] for i in range(args.reevals)] if args.sequential else [list(range(args.reevals))]
            reevals = [row for batch in batches for row in reevaluate(args, batch, load)]
            remaining = args.search_s - (time.monotonic() - started)
            if remaining > 0 and load.poll() is None:
                time.sleep(remaining)
        finally:
            searched_s = time.monotonic() - started
            load.stop(grace=((signal.SIGINT, 30.0),))  # Ctrl-C: its pool closes its workers
    best = best_of_run(run_dir) if (run_dir / "run.sqlite").exists() else None
    meta = run_meta(
        load=" ".join(load_command(args, run_dir)[1:]),
        search_s=round(searched_s),
        candidate=str(args.candidate),
    )
    data = report(best, reevals, meta)
    (out / "wall_load.json").write_text(json.dumps(data, indent=2, default=str))
    table = markdown(data)
    (out / "wall_load.md").write_text(table)
    print(table)
    failed = [r for r in reevals if "error" in r]
    return 1 if best is None or failed else 0


def _parse(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    return None


def default_candidate(task: Path) -> Path | None:
    found = sorted((task / "candidates").glob("*.py"))
    return found[0] if found else None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/wall_load.py",
        description="Wall-regime intervals and fresh-process spread under a search's load.",
    )
    parser.add_argument("--out", type=Path, help="directory for wall_load.json, wall_load.md and the run")
    parser.add_argument("--task", type=Path, default=REPO / "examples" / "tasks" / "decode_metadata")
    parser.add_argument("--candidate", type=Path, help="candidate to re-evaluate (default: the task's first)")
    parser.add_argument("--workers", type=int, default=12, help="the search's --workers-per-device")
    parser.add_argument("--search-s", type=float, default=120.0, help="seconds the search runs at least")
    parser.add_argument("--reevals", type=int, default=5, help="fresh-process re-evaluations")
    parser.add_argument(
        "--reeval-delay", type=float, default=20.0, help="seconds the search warms up before the first"
    )
    parser.add_argument(
        "--child-timeout",
        type=float,
        default=150.0,
        help="seconds per re-evaluation (per batch when together)",
    )
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="one re-evaluation after another (default: all at once, each still a fresh process)",
    )
    add_set_option(parser, "timing.wall_ci_target=0.01")
    parser.add_argument("--dry-run", action="store_true", help="print the commands; run nothing")
    parser.add_argument("--child", nargs=2, type=Path, metavar=("TASK", "CANDIDATE"), help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        eval_config(args.overrides)
    except (ValueError, TypeError) as exc:
        print(f"error: --set: {exc}", file=sys.stderr)
        return 2
    if args.child is not None:
        print(RESULT_PREFIX + json.dumps(run_child(*args.child, args.overrides)), flush=True)
        return 0
    if not (args.task / "task.toml").is_file():
        print(f"error: --task {args.task} is not a task directory", file=sys.stderr)
        return 2
    args.candidate = args.candidate or default_candidate(args.task)
    if args.candidate is None or not args.candidate.is_file():
        print(f"error: no candidate file to re-evaluate ({args.candidate})", file=sys.stderr)
        return 2
    if args.out is None:
        print("error: --out DIR is required", file=sys.stderr)
        return 2
    if args.dry_run:
        print(" ".join(load_command(args, args.out / "run")))
        for _ in range(args.reevals):
            print(" ".join(child_command(args)))
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
