"""The search's best kernel against eager PyTorch and against torch.compile, per case, in both regimes.

For each `TASK=CANDIDATE` pair (CANDIDATE is e.g. runs/<task>/best.py from `kernelbot evolve`), three
pairings are timed in ONE process with the evaluator's own timing stage (evaluators.timing.time_cases:
CUDA-graph and launch-inclusive wall regimes, interleaved paired samples, Tukey fences, CIs):
  eager reference   vs  best candidate
  eager reference   vs  torch.compile(reference)
  torch.compile     vs  best candidate          (the direct ratio: > 1 means the candidate beats compile)
Every timed call is re-checked against the float64 eager reference. torch.compile uses the default mode
(Inductor, no internal CUDA graphs), dynamic=False, one compilation per case's shapes.

    PYTHONPATH=. python bench/vs_compile.py --out bench-out/vs_compile \
        examples/tasks/silu_and_mul=runs/silu/best.py ...

For a sweep of many variants: `--compile-only` times only "torch.compile vs candidate", and
`--cases NAME[,NAME...]` keeps only the named cases (each task keeps those of its own; every name must
belong to some task). `--twin` adds the A/A yardstick, torch.compile timed against itself: on a
bandwidth-bound case two identical kernels differ by a few tenths of a percent between runs, and "best vs
compile" cannot be read finer than that (bench/vs_compile_pool.py reads several runs together).
`--set KEY=VALUE` overrides an EvalConfig field (e.g. `timing.regimes=["graph"]`, or
`timing.graph_input_sets=8`: more buffers per implementation).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import secrets
import sys
from pathlib import Path
from typing import Any

from bench.config_overrides import add_set_option, eval_config
from bench.meta import run_meta


def _load_candidate(path: Path, entry: str) -> tuple[Any, Any]:
    spec = importlib.util.spec_from_file_location(f"kb_best_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module, getattr(module, entry)


PAIRINGS = ("best_vs_eager", "compile_vs_eager", "best_vs_compile")
COMPILE_ONLY_PAIRINGS = ("best_vs_compile",)
# The A/A yardstick (--twin): torch.compile against itself, each side on its own buffers and its own captured
# graphs. The kernels are identical, so how far it lands from 1.000x (a little from process to process, more
# from one device call to the next) is the resolution of "best vs compile" on that case.
TWIN_PAIRING = "compile_vs_compile"
ALL_PAIRINGS = (*PAIRINGS, TWIN_PAIRING)


def _time_pair(
    task: Any,
    cases: list[Any],
    backend: Any,
    baseline: Any,
    contender: Any,
    module: Any,
    path: Path,
    config: Any,
    gpu_lock: Any = None,
) -> Any:
    from evaluators.context import JudgeContext
    from evaluators.correctness import check_call
    from evaluators.timing import time_cases

    seeds = tuple(secrets.randbits(31) for _ in range(3))
    common = dict(
        task=task,
        backend=backend,
        config=config,
        seeds=seeds,
        candidate_module=module,
        candidate_path=path,
        candidate_source=path.read_text(),
        log=lambda message: None,
    )
    eager = task.load_reference()
    ctx = JudgeContext(reference=baseline, candidate=contender, **common)
    check_ctx = JudgeContext(reference=eager, candidate=contender, **common)
    report = time_cases(
        ctx,
        cases,
        check_call=lambda _c, case, before, ret, after: check_call(check_ctx, case, before, ret, after),
        **({"gpu_lock": gpu_lock} if gpu_lock is not None else {}),
    )
    return report


def measure(
    task_dir: Path,
    candidate_path: Path,
    case_names: frozenset[str] | None = None,
    pairings: tuple[str, ...] = PAIRINGS,
    config: Any = None,
    gpu_lock: Any = None,
    compiled: Any = None,
) -> dict[str, Any]:
    """Time `pairings` of one task on its cases (only those in `case_names` when given), with `config` (an
    EvalConfig; its defaults when None). `gpu_lock` (an evaluators.timing.GpuHold) is held around each
    case's sampling, as the evaluator's workers do, when other processes time on the same GPU; `compiled`
    is a torch.compile of the reference to time (and keep compiled for the caller), else one is made here."""
    import torch
    import torch._dynamo

    from evaluators.backends import require_backend
    from evaluators.config import EvalConfig
    from evaluators.task import load_task

    config = config or EvalConfig()

    torch._dynamo.config.cache_size_limit = 256  # one compilation per case and dtype
    task = load_task(task_dir)
    backend = require_backend("triton-cuda")
    backend.init_device()
    module, best = _load_candidate(candidate_path, task.entry)
    eager = task.load_reference()
    compiled = compiled if compiled is not None else torch.compile(eager, dynamic=False)
    pairs = {
        "best_vs_eager": (eager, best),
        "compile_vs_eager": (eager, compiled),
        "best_vs_compile": (compiled, best),
    }
    if TWIN_PAIRING in pairings:
        # The same compiled callable on both sides: a second torch.compile would autotune its reductions
        # again and could keep another config (rmsnorm's fp32 case measured 1.012x that way on the H200).
        pairs[TWIN_PAIRING] = (compiled, compiled)
    cases = [c for c in task.cases if case_names is None or c.name in case_names]
    out: dict[str, Any] = {"task": task.name, "regime": task.regime, "candidate": str(candidate_path)}
    for name in pairings:
        baseline, contender = pairs[name]
        report = _time_pair(
            task, cases, backend, baseline, contender, module, candidate_path, config, gpu_lock
        )
        out[name] = {
            "passed": report.passed,
            "reason": report.reason,
            "skipped": report.skipped,
            "cases": {
                case: {
                    regime: {
                        "speedup": t.speedup,
                        "ci": [t.ci_low, t.ci_high],
                        "baseline_us": t.reference.median_us,
                        "contender_us": t.candidate.median_us,
                        "cv": [t.reference.cv, t.candidate.cv],
                    }
                    for regime, t in regimes.items()
                }
                for case, regimes in report.timings.items()
            },
        }
    return out


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Best evolved kernel vs eager PyTorch and torch.compile",
        "",
        f"- GPU: {meta['device']}; torch {meta['torch']}, triton {meta['triton']}, Python {meta['python']}",
        f"- date: {meta['date']}; command: `{meta['command']}`",
        "- speedup = baseline time / contender time (median of paired ratios, 95 % CI); task regime in bold",
        "",
        "| task | candidate | case | regime | best vs eager | compile vs eager | **best vs compile** "
        "| compile vs compile (A/A) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def cell(row: dict[str, Any], pair: str, case: str, regime: str) -> str:
        if pair not in row:
            return "-"
        t = row[pair]["cases"].get(case, {}).get(regime)
        if t is None:
            return "n/a"
        return f"{t['speedup']:.3f}x [{t['ci'][0]:.3f}, {t['ci'][1]:.3f}]"

    for row in rows:
        timed = [row[pair] for pair in ALL_PAIRINGS if pair in row]
        cases = next((list(p["cases"]) for p in timed if p["cases"]), [])
        candidate = Path(row["candidate"]).stem
        for case in cases:
            for regime in ("graph", "wall"):
                mark = "**" if regime == row["regime"] else ""
                lines.append(
                    f"| {row['task']} | {candidate} | {case} | {mark}{regime}{mark} "
                    f"| {cell(row, 'best_vs_eager', case, regime)} "
                    f"| {cell(row, 'compile_vs_eager', case, regime)} "
                    f"| {cell(row, 'best_vs_compile', case, regime)} "
                    f"| {cell(row, TWIN_PAIRING, case, regime)} |"
                )
        for pair in ALL_PAIRINGS:
            if pair in row and not row[pair]["passed"]:
                reason = row[pair]["reason"][:120]
                lines.append(f"| {row['task']} | {candidate} | - | - | {pair} failed: {reason} | | | |")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench/vs_compile.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--cases",
        default="",
        metavar="NAME[,NAME...]",
        help="time only these cases (each task keeps the named cases it has); default: every case",
    )
    parser.add_argument(
        "--compile-only",
        action="store_true",
        help="time only torch.compile vs the candidate (skip eager vs best and eager vs compile)",
    )
    parser.add_argument(
        "--twin",
        action="store_true",
        help="also time torch.compile against itself (A/A: the resolution of best vs compile)",
    )
    add_set_option(parser, "timing.graph_input_sets=8")
    parser.add_argument("pairs", nargs="+", help="TASK_DIR=CANDIDATE.py")
    return parser


def parse_jobs(pairs: list[str], cases: str) -> tuple[list[tuple[Path, Path]], frozenset[str] | None]:
    """The (task dir, candidate) jobs and the case filter; ValueError names the first bad argument."""
    from evaluators.task import load_task

    jobs = []
    for pair in pairs:
        task, _, cand = pair.partition("=")
        if not cand or not Path(task, "task.toml").is_file() or not Path(cand).is_file():
            raise ValueError(f"{pair!r} is not TASK_DIR=CANDIDATE.py with both present")
        jobs.append((Path(task), Path(cand)))
    names = frozenset(n.strip() for n in cases.split(",") if n.strip())
    if not names:
        return jobs, None
    known: dict[Path, set[str]] = {task: {c.name for c in load_task(task).cases} for task, _ in jobs}
    unknown = sorted(names - set().union(*known.values()))
    if unknown:
        raise ValueError(f"--cases: {', '.join(unknown)} is not a case of any task given")
    for task, case_set in known.items():
        if not names & case_set:
            raise ValueError(f"--cases names no case of {task} (its cases: {', '.join(sorted(case_set))})")
    return jobs, names


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        jobs, case_names = parse_jobs(args.pairs, args.cases)
        overrides, config = eval_config(args.overrides)
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pairings = COMPILE_ONLY_PAIRINGS if args.compile_only else PAIRINGS
    if args.twin:
        pairings = (*pairings, TWIN_PAIRING)

    rows = []
    failed = 0
    twinned: set[Path] = set()
    for task, cand in jobs:
        # The A/A belongs to the task, not the candidate: timed with the task's first candidate only.
        job_pairings = tuple(p for p in pairings if p != TWIN_PAIRING or task not in twinned)
        twinned.add(task)
        try:
            rows.append(measure(task, cand, case_names, job_pairings, config))
        except Exception as exc:  # one task's failure must not lose the others' numbers
            failed += 1
            print(f"{task.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"done {task.name} {cand.name}", flush=True)
    meta = run_meta(overrides=overrides)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "vs_compile.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    table = markdown(rows, meta)
    (args.out / "vs_compile.md").write_text(table)
    print(table)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
