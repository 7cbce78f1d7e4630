"""Eager PyTorch, torch.compile and a search's best, side by side per case in both regimes, in one process.

    PYTHONPATH=. python bench/eager_compile_best.py TASK_DIR RUN_DIR --out OUT_DIR [--cases A,B] [--set K=V]

- Times: bench/vs_compile.measure, i.e. the evaluator's timing stage (graph: CUDA-graph replay GPU time;
  wall: launch-inclusive host time; interleaved paired samples, Tukey fences, 95 % CIs, every timed call
  re-checked against the float64 eager reference) for three pairings: compile vs eager, best vs eager, best
  vs compile. torch.compile is the default mode, dynamic=False, one compilation per case's shapes.
- Kernels: each implementation's kernel launches per call, counted with torch.profiler and sorted into
  Triton kernels, other (ATen / library) kernels and memory copies or sets: whether torch.compile emits more
  than one kernel or leaves an op to ATen, which the LLM-free acceptance's 2x rule depends on.
- Sampling holds the evaluator's GPU lock (evaluators.gpu_lock), so this can run beside searches or other
  copies of itself on the same GPU without their timings overlapping.
- RUN_DIR/best.py is the run's best (`kernelbot evolve` writes it when a candidate was correct); a run
  without one gets compile vs eager only, and the JSON says why.

Writes OUT_DIR/<task>.json and OUT_DIR/<task>.md (the table, also printed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.config_overrides import add_set_option, eval_config
from bench.meta import run_meta
from bench.vs_compile import measure

IMPLEMENTATIONS = ("eager", "compile", "best")
WITH_BEST = ("compile_vs_eager", "best_vs_eager", "best_vs_compile")
WITHOUT_BEST = ("compile_vs_eager",)
_MEMORY_OPS = ("Memcpy", "Memset", "memcpy", "memset")


def gpu_lock_hold() -> Callable[[], contextlib.AbstractContextManager[bool]]:
    """The evaluator's GpuHold for device 0: the per-device flock its workers take around sampling."""
    from evaluators.gpu_lock import GpuLock, device_key

    lock = GpuLock(device_key(0))

    @contextlib.contextmanager
    def hold() -> Iterator[bool]:
        lock.acquire()
        try:
            yield lock.idle_s < 0.25  # the GPU was busy moments ago: its clocks are up
        finally:
            lock.release()

    return hold


def kernel_counts(fn: Callable[..., Any], task: Any, case: Any) -> dict[str, Any]:
    """Kernel launches of one call of `fn` on `case` (after two warm-up calls, fresh inputs each call)."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    for _ in range(2):  # compiles (torch.compile) and autotunes before the counted call
        args, kwargs = task.make_inputs(case, 0, "cuda")
        fn(*args, **kwargs)
    args, kwargs = task.make_inputs(case, 1, "cuda")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*args, **kwargs)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == DeviceType.CUDA]
    memory = [n for n in names if n.startswith(_MEMORY_OPS)]
    launched = [n for n in names if n not in memory]
    triton = [n for n in launched if n.startswith(("triton", "_")) or "triton" in n]
    other = [n for n in launched if n not in triton]
    return {
        "kernels": len(launched),
        "triton": len(triton),
        "other": len(other),
        "memory_ops": len(memory),
        "other_names": sorted({n[:120] for n in other}),
    }


def case_rows(task: Any, case: Any) -> int | None:
    """Rows a case works on: the product of its dynamic sizes (tokens, bs...); None when it has none."""
    sizes = [case.params.get(name) for name in task.dynamic]
    sizes = [s for s in sizes if isinstance(s, int) and not isinstance(s, bool)]
    return math.prod(sizes) if sizes else None


def compare(
    task_dir: Path,
    run_dir: Path,
    case_names: frozenset[str] | None = None,
    config: Any = None,
) -> dict[str, Any]:
    import torch

    from evaluators.task import load_task

    task = load_task(task_dir)
    best_path = run_dir / "best.py"
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    has_best = best_path.is_file()
    out: dict[str, Any] = {
        "task": task.name,
        "task_dir": str(task_dir),
        "run_dir": str(run_dir),
        "regime": task.regime,
        "stop_reason": summary.get("stop_reason"),
        "best": _best_info(summary, best_path) if has_best else None,
        "why_no_best": "" if has_best else _why_no_best(run_dir, summary),
    }
    eager = task.load_reference()
    compiled = torch.compile(eager, dynamic=False)  # timed below, then counted: compiled once per case
    candidate = best_path if has_best else task.reference_path  # compile vs eager loads no candidate code
    hold = gpu_lock_hold()
    timed = measure(
        task_dir,
        candidate,
        case_names,
        WITH_BEST if has_best else WITHOUT_BEST,
        config,
        gpu_lock=hold,
        compiled=compiled,
    )
    out["pairings"] = {k: v for k, v in timed.items() if k in WITH_BEST}
    implementations: dict[str, Callable[..., Any]] = {"eager": eager, "compile": compiled}
    if has_best:
        from bench.vs_compile import _load_candidate

        implementations["best"] = _load_candidate(best_path, task.entry)[1]
    cases = [c for c in task.cases if case_names is None or c.name in case_names]
    out["cases"] = {}
    for case in cases:
        kernels: dict[str, Any] = {}
        with hold():  # a few calls, but on the GPU that other processes may be timing on
            for name, fn in implementations.items():
                try:
                    kernels[name] = kernel_counts(fn, task, case)
                except Exception as exc:  # counting is a side show: a failure here loses no time measured
                    kernels[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        out["cases"][case.name] = {
            "rows": case_rows(task, case),
            "kernels": kernels,
            **_per_case(timed, case),
        }
    return out


def _per_case(timed: dict[str, Any], case: Any) -> dict[str, Any]:
    """Per regime: each implementation's median time and the three speedups with their CIs."""
    times: dict[str, dict[str, float | None]] = {}
    speedups: dict[str, dict[str, Any]] = {}
    for regime in ("graph", "wall"):
        row = {
            pair: timed.get(pair, {}).get("cases", {}).get(case.name, {}).get(regime) for pair in WITH_BEST
        }
        times[regime] = {
            "eager": (row["compile_vs_eager"] or row["best_vs_eager"] or {}).get("baseline_us"),
            "compile": (row["compile_vs_eager"] or {}).get("contender_us"),
            "best": (row["best_vs_compile"] or row["best_vs_eager"] or {}).get("contender_us"),
        }
        speedups[regime] = {
            pair: {"speedup": t["speedup"], "ci": t["ci"]} if t else None for pair, t in row.items()
        }
    return {"times_us": times, "speedups": speedups}


def _best_info(summary: dict[str, Any], path: Path) -> dict[str, Any]:
    best = summary.get("best") or {}
    return {"path": str(path), **{k: best.get(k) for k in ("program_id", "operator", "score", "speedup")}}


def _why_no_best(run_dir: Path, summary: dict[str, Any]) -> str:
    if not run_dir.is_dir():
        return f"{run_dir} does not exist (the search did not start)"
    if not summary:
        return f"{run_dir} holds no summary.json (the search did not finish)"
    return f"the search found no correct candidate ({summary.get('stop_reason')}; {summary.get('outcomes')})"


def markdown(result: dict[str, Any], meta: dict[str, Any]) -> str:
    best = result["best"]
    lines = [
        f"# {result['task']}: eager vs torch.compile vs the search's best",
        "",
        f"- GPU: {meta['device']}; torch {meta['torch']}, triton {meta['triton']}; {meta['date']}",
        f"- command: `{meta['command']}`",
        f"- run: {result['run_dir']} ({result['stop_reason']}); best: "
        + (f"{best['program_id']} ({best['operator']})" if best else f"none: {result['why_no_best']}"),
        "- times: medians in us; speedups: median of paired ratios [95 % CI]; the task's regime in bold;"
        " kernels per call: eager / compile / best (compile's non-Triton kernels in brackets)",
        "",
        "| case | rows | regime | eager us | compile us | best us | compile vs eager | best vs eager "
        "| best vs compile | kernels |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, case in result["cases"].items():
        for regime in ("graph", "wall"):
            mark = "**" if regime == result["regime"] else ""
            times = case["times_us"][regime]
            cells = [_us(times[i]) for i in IMPLEMENTATIONS]
            ratios = [_ratio(case["speedups"][regime].get(p)) for p in WITH_BEST]
            lines.append(
                f"| {name} | {case['rows'] if case['rows'] is not None else '-'} | {mark}{regime}{mark} | "
                + " | ".join(cells + ratios)
                + f" | {_kernels(case['kernels'])} |"
            )
    for pair, timed in result["pairings"].items():
        if not timed["passed"]:
            lines.append(f"\n{pair} failed: {timed['reason'][:300]}")
    return "\n".join(lines) + "\n"


def _us(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


def _ratio(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "-"
    return f"{entry['speedup']:.3f}x [{entry['ci'][0]:.3f}, {entry['ci'][1]:.3f}]"


def _kernels(kernels: dict[str, Any]) -> str:
    def one(name: str) -> str:
        k = kernels.get(name)
        if not k or "error" in k:
            return "?" if k else "-"
        return f"{k['kernels']}" + (f" [{k['other']}]" if name == "compile" and k["other"] else "")

    return " / ".join(one(name) for name in IMPLEMENTATIONS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/eager_compile_best.py", description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path)
    parser.add_argument("run", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cases", default="", metavar="NAME[,NAME...]", help="only these cases")
    add_set_option(parser, "timing.graph_input_sets=8")
    args = parser.parse_args(argv)
    if not (args.task / "task.toml").is_file():
        print(f"error: {args.task} holds no task.toml", file=sys.stderr)
        return 2
    try:
        overrides, config = eval_config(args.overrides)
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    names = frozenset(n.strip() for n in args.cases.split(",") if n.strip()) or None
    result = compare(args.task, args.run, names, config)
    meta = run_meta(overrides=overrides)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{result['task']}.json").write_text(json.dumps({"meta": meta, **result}, indent=2))
    table = markdown(result, meta)
    (args.out / f"{result['task']}.md").write_text(table)
    print(table)
    return 0 if all(p["passed"] for p in result["pairings"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
