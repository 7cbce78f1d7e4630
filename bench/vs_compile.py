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
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import secrets
import sys
from pathlib import Path
from typing import Any

from bench.meta import run_meta


def _load_candidate(path: Path, entry: str) -> tuple[Any, Any]:
    spec = importlib.util.spec_from_file_location(f"kb_best_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module, getattr(module, entry)


def _time_pair(task: Any, backend: Any, baseline: Any, contender: Any, module: Any, path: Path) -> Any:
    from evaluators.config import EvalConfig
    from evaluators.context import JudgeContext
    from evaluators.correctness import check_call
    from evaluators.timing import time_cases

    seeds = tuple(secrets.randbits(31) for _ in range(3))
    config = EvalConfig()
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
        list(task.cases),
        check_call=lambda _c, case, before, ret, after: check_call(check_ctx, case, before, ret, after),
    )
    return report


def measure(task_dir: Path, candidate_path: Path) -> dict[str, Any]:
    import torch
    import torch._dynamo

    from evaluators.backends import require_backend
    from evaluators.task import load_task

    torch._dynamo.config.cache_size_limit = 256  # one compilation per case and dtype
    task = load_task(task_dir)
    backend = require_backend("triton-cuda")
    backend.init_device()
    module, best = _load_candidate(candidate_path, task.entry)
    eager = task.load_reference()
    compiled = torch.compile(eager, dynamic=False)
    pairs = {
        "best_vs_eager": (eager, best),
        "compile_vs_eager": (eager, compiled),
        "best_vs_compile": (compiled, best),
    }
    out: dict[str, Any] = {"task": task.name, "regime": task.regime, "candidate": str(candidate_path)}
    for name, (baseline, contender) in pairs.items():
        report = _time_pair(task, backend, baseline, contender, module, candidate_path)
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
        "| task | case | regime | best vs eager | compile vs eager | **best vs compile** |",
        "| --- | --- | --- | --- | --- | --- |",
    ]

    def cell(row: dict[str, Any], pair: str, case: str, regime: str) -> str:
        t = row[pair]["cases"].get(case, {}).get(regime)
        if t is None:
            return "n/a"
        return f"{t['speedup']:.2f}x [{t['ci'][0]:.2f}, {t['ci'][1]:.2f}]"

    for row in rows:
        cases = list(row["best_vs_eager"]["cases"]) or list(row["best_vs_compile"]["cases"])
        for case in cases:
            for regime in ("graph", "wall"):
                mark = "**" if regime == row["regime"] else ""
                lines.append(
                    f"| {row['task']} | {case} | {mark}{regime}{mark} "
                    f"| {cell(row, 'best_vs_eager', case, regime)} "
                    f"| {cell(row, 'compile_vs_eager', case, regime)} "
                    f"| {cell(row, 'best_vs_compile', case, regime)} |"
                )
        for pair in ("best_vs_eager", "compile_vs_eager", "best_vs_compile"):
            if not row[pair]["passed"]:
                lines.append(f"| {row['task']} | - | - | {pair} failed: {row[pair]['reason'][:120]} | | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/vs_compile.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("pairs", nargs="+", help="TASK_DIR=CANDIDATE.py")
    args = parser.parse_args(argv)
    jobs = []
    for pair in args.pairs:
        task, _, cand = pair.partition("=")
        if not cand or not Path(task, "task.toml").is_file() or not Path(cand).is_file():
            print(f"error: {pair!r} is not TASK_DIR=CANDIDATE.py with both present", file=sys.stderr)
            return 2
        jobs.append((Path(task), Path(cand)))

    rows = []
    for task, cand in jobs:
        try:
            rows.append(measure(task, cand))
        except Exception as exc:  # one task's failure must not lose the others' numbers
            print(f"{task.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"done {task.name}", flush=True)
    meta = run_meta()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "vs_compile.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    table = markdown(rows, meta)
    (args.out / "vs_compile.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
