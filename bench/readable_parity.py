"""The shipped (readable) kernel module against the search's raw winner, in one process, per case and regime.

The module `kernelbot integrate` writes is built from the winner: markers and the knob line stripped, names
the writer chose, the entry renamed, a guard added. Its kernels must run as fast as the winner's (the
acceptance asks for 1 %). Each `TASK=RAW=READABLE[:ENTRY]` triple is timed with the evaluator's own timing
stage (evaluators.timing.time_cases, as bench/vs_compile.py does): the raw winner is the baseline, the
readable module the contender, then the other way round (the geometric mean of the two cancels what favours
one side of a pair), so speedup = raw time / readable time and parity is [0.99, 1.01]. Every timed call of
the contender is re-checked against the eager reference. ENTRY defaults to the task's entry (give the
module's public name, e.g. `rms_norm_triton`, for an integrated module); `--modules DIR` takes the triples
bench/readable_modules.py wrote there.

    PYTHONPATH=. python bench/readable_parity.py --out bench-out/readable_parity \
        TASK_DIR=RUN/search/best.py=RUN/worktree/pkg/kernel_triton.py:kernel_triton

`--check-only` runs no timing: both sides on every case, compared with the evaluator's tolerances (on a
machine without a GPU through Triton's interpreter), to see that a pair is what it should be.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import sys
from pathlib import Path
from typing import Any

from bench.config_overrides import add_set_option, eval_config
from bench.meta import run_meta
from kernelbot.integrate.drop_unread_params import called_as_the_reference


def _load(path: Path, entry: str) -> tuple[Any, Any]:
    spec = importlib.util.spec_from_file_location(f"kb_parity_{abs(hash((path, entry)))}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"error: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, entry, None)
    if not callable(fn):
        raise SystemExit(f"error: {path} defines no function {entry}()")
    return module, fn


def _parse(triple: str) -> tuple[Path, Path, Path, str]:
    parts = triple.split("=")
    if len(parts) != 3:
        raise SystemExit(f"error: expected TASK=RAW=READABLE[:ENTRY], got {triple!r}")
    readable, _, entry = parts[2].partition(":")
    return Path(parts[0]), Path(parts[1]), Path(readable), entry


def check(task_dir: Path, raw_path: Path, readable_path: Path, entry: str) -> dict[str, Any]:
    """Both sides on every case (seed 0), outputs compared with the evaluator's tolerance table."""
    import torch

    from evaluators.correctness.tolerances import tolerance_for
    from evaluators.task import load_task

    task = load_task(task_dir)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    _, raw = _load(raw_path, task.entry)
    _, readable = _load(readable_path, entry or task.entry)
    readable = called_as_the_reference(readable, inspect.signature(raw))
    mismatches = []
    for case in task.cases:
        args, kwargs = task.make_inputs(case, 0, device)
        twin_args, twin_kwargs = task.make_inputs(case, 0, device)
        expected, actual = raw(*args, **kwargs), readable(*twin_args, **twin_kwargs)
        flat_expected = expected if isinstance(expected, (tuple, list)) else [expected]
        flat_actual = actual if isinstance(actual, (tuple, list)) else [actual]
        for k, (e, a) in enumerate(zip(flat_expected, flat_actual, strict=True)):
            if torch.is_tensor(e):
                tol = tolerance_for(e.dtype, task)
                if not torch.allclose(a.float(), e.float(), atol=tol.atol, rtol=tol.rtol, equal_nan=True):
                    mismatches.append(f"{case.name}: output {k}")
    return {"task": task.name, "checked": len(task.cases), "mismatches": mismatches}


def measure(task_dir: Path, raw_path: Path, readable_path: Path, entry: str, config: Any) -> dict[str, Any]:
    """Both orders: the raw winner as the baseline and the module as the contender, then the sides swapped.
    Whatever favours one side of a pair (where its inputs sit, which side a round times first) then counts
    once for each, and the geometric mean of the two ratios cancels it; each order's own figure is kept."""
    from bench.vs_compile import _time_pair
    from evaluators.backends import require_backend
    from evaluators.task import load_task

    task = load_task(task_dir)
    backend = require_backend("triton-cuda")
    backend.init_device()
    raw_module, raw = _load(raw_path, task.entry)
    module, readable = _load(readable_path, entry or task.entry)
    # The module's entry takes the arguments its code reads; the task's inputs are the reference's. Where
    # that needs an adapter, the raw winner is called through one too: it maps the arguments by name on
    # every call, some µs of Python, which a wall-regime pair would otherwise count against the module
    # (on the H100, SGLang's decode metadata module, two unread parameters dropped: 0.89-0.91x of its raw
    # winner in the wall regime, 1.00x in the graph regime; results/2026-12-07-h100.md §6).
    reference = inspect.signature(raw)
    adapted = called_as_the_reference(readable, reference)
    if adapted is not readable:
        raw = called_as_the_reference(raw, reference, always=True)
    readable = adapted
    cases = list(task.cases)
    forward = _time_pair(task, cases, backend, raw, readable, module, readable_path, config)
    swapped = _time_pair(task, cases, backend, readable, raw, raw_module, raw_path, config)
    rows: dict[str, dict[str, Any]] = {}
    for case, regimes in forward.timings.items():
        for regime, t in regimes.items():
            back = swapped.timings.get(case, {}).get(regime)
            if back is None:
                continue
            rows.setdefault(case, {})[regime] = both_orders(
                (t.speedup, t.ci_low, t.ci_high), (back.speedup, back.ci_low, back.ci_high)
            ) | {"raw_us": t.reference.median_us}
    return {
        "task": task.name,
        "regime": task.regime,
        "passed": forward.passed and swapped.passed,
        "reason": forward.reason or swapped.reason,
        "cases": rows,
    }


def both_orders(forward: tuple[float, float, float], swapped: tuple[float, float, float]) -> dict[str, Any]:
    """raw / readable from (speedup, ci low, ci high) of the raw-baseline pair and of the swapped pair
    (readable / raw there): the geometric mean of the two estimates, its interval from the two intervals'
    ends, and each order's own figure as raw / readable."""
    speedup, low, high = forward
    back, back_low, back_high = swapped
    return {
        "speedup": math.sqrt(speedup / back),
        "ci": [math.sqrt(low / back_high), math.sqrt(high / back_low)],
        "orders": [speedup, 1.0 / back],
    }


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Readable kernel module vs the search's raw winner",
        "",
        f"- GPU: {meta['device']}; torch {meta['torch']}, triton {meta['triton']}; date {meta['date']}",
        f"- command: `{meta['command']}`",
        "- speedup = raw winner time / readable module time: the geometric mean of two pairings, the raw",
        "  winner as the baseline and then the module (median of paired ratios each, 95 % CIs combined);",
        "  each order's own figure beside it. Parity: the CI inside [0.99, 1.01]",
        "",
        "| task | case | regime | readable vs raw | raw as baseline / module as baseline | raw us |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        for case, regimes in row.get("cases", {}).items():
            for regime, t in regimes.items():
                orders = " / ".join(f"{o:.3f}x" for o in t["orders"])
                lines.append(
                    f"| {row['task']} | {case} | {regime} | {t['speedup']:.3f}x "
                    f"[{t['ci'][0]:.3f}, {t['ci'][1]:.3f}] | {orders} | {t['raw_us']:.2f} |"
                )
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("triples", nargs="*", metavar="TASK=RAW=READABLE[:ENTRY]")
    parser.add_argument(
        "--modules",
        type=Path,
        metavar="DIR",
        help="also every triple bench/readable_modules.py wrote there (DIR/triples.txt, one a line)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-out/readable_parity"))
    parser.add_argument("--check-only", action="store_true", help="compare outputs, time nothing")
    add_set_option(parser, 'timing.regimes=["graph"]')
    return parser


def main(argv: list[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    listed = list(options.triples)
    if options.modules is not None:
        listed += (options.modules / "triples.txt").read_text().split()
    if not listed:
        print("error: no module to time: give TASK=RAW=READABLE triples or --modules DIR", file=sys.stderr)
        return 2
    triples = [_parse(t) for t in listed]
    options.out.mkdir(parents=True, exist_ok=True)
    if options.check_only:
        results = [check(*t) for t in triples]
        print(json.dumps(results, indent=1))
        return 1 if any(r["mismatches"] for r in results) else 0
    try:
        _, config = eval_config(options.overrides)
    except (ValueError, TypeError) as exc:
        print(f"error: --set: {exc}", file=sys.stderr)
        return 1
    rows = [measure(*t, config) for t in triples]
    meta = run_meta()
    (options.out / "readable_parity.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (options.out / "readable_parity.md").write_text(markdown(rows, meta))
    print(markdown(rows, meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
