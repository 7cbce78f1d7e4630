"""Cross-process stability of kernelbot's timing, side by side with triton.testing.do_bench and
do_bench_cudagraph on the same kernels.

Three synthetic kernels sized for an H200 (4.3 TB/s measured copy bandwidth, 60 MB L2): `tiny` (~1 µs, an
elementwise op on 128 KiB), `mid` (~10 µs, a row-norm reduction over 32 MiB) and `large` (~200 µs, an 800 MiB
copy). Each is a real Task directory (task.toml, reference.py in PyTorch, inputs.py) with a Triton candidate.
Every evaluation is a FRESH process (new CUDA context, new allocations, new hidden seeds) that runs
evaluators.timing.time_cases twice: as the task is (graph regime scored, then the wall regime's short look,
`kernelbot-wall-look`), and with the task declared a wall task (`kernelbot-wall`: the wall regime as a wall
task's verdict gets it, with its stop rule, pinning and cap); then do_bench and do_bench_cudagraph on the same
reference and candidate, in an order rotated per evaluation. The parent reports, per kernel and method, the
cross-process coefficient of variation of the reported candidate time and of its speedup over the reference,
and rewrites stability.json after every process, so a run cut short still leaves what it measured.

Real kernels sit beside them with `--real NAME=TASK_DIR:KERNEL[@CASE]` (e.g. the fusion generator's winner
for a function extracted fresh by bench/fresh_tasks.py, one serving case): they move more between processes
than the synthetic ones (issue 27 saw a graph-regime speedup CV of 0.5-3.4 % on two such winners).

Run from the repository root on the GPU machine:
    PYTHONPATH=. python bench/stability.py --out bench-out/stability [--real NAME=TASK_DIR:KERNEL@CASE ...]
writes stability.json and stability.md to --out (and the task directories under --out/tasks).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import importlib.util
import json
import math
import os
import platform
import secrets
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from evaluators.subprocesses import run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# The summary lives in bench/stability_report.py; `X as X` keeps its names reachable as stability.X.
try:
    from bench.stability_report import METHODS as METHODS
    from bench.stability_report import TARGET_CV as TARGET_CV
    from bench.stability_report import MethodSummary as MethodSummary
    from bench.stability_report import cross_cv as cross_cv
    from bench.stability_report import markdown, summarize
except ModuleNotFoundError:  # run as `python bench/stability.py` without PYTHONPATH=.: bench/ is on sys.path
    from stability_report import METHODS as METHODS
    from stability_report import TARGET_CV as TARGET_CV
    from stability_report import MethodSummary as MethodSummary
    from stability_report import cross_cv as cross_cv
    from stability_report import markdown, summarize

RESULT_PREFIX = "KB_STABILITY_RESULT "
TASKS_DIR = Path(__file__).resolve().parent / "stability_tasks"
# Kernel name -> its task directory under bench/stability_tasks (task.toml, reference.py, inputs.py,
# candidate.py), sized for the H200; nominal times per call in the graph regime.
KERNELS: dict[str, str] = {"tiny": "~1 µs", "mid": "~10 µs", "large": "~200 µs"}


# --- task directories ------------------------------------------------------------------------------------


def write_task(root: Path, kernel: str, params: dict[str, Any] | None = None) -> Path:
    """Copy the kernel's task directory to `root`; `params` overrides its case's sizes (tests: small ones)."""
    source = TASKS_DIR / kernel
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(source, root)
    if params:
        import tomli_w

        toml_path = root / "task.toml"
        data = tomllib.loads(toml_path.read_text())
        data["cases"][0].update(params)
        toml_path.write_text(tomli_w.dumps(data))
    return root


def write_real_task(root: Path, spec: str) -> tuple[str, Path]:
    """`NAME=TASK_DIR:KERNEL[@CASE]`: a real task (e.g. a fresh function of bench/fresh_tasks.py) and a kernel
    for it (a search's best.py), copied to root/NAME with that one case (default: the task's first), renamed
    NAME, and the kernel as candidate.py. Raises ValueError naming what is wrong."""
    import tomli_w

    name, sep, rest = spec.partition("=")
    where, _, case_name = rest.partition("@")
    task_dir, colon, kernel = where.rpartition(":")
    if not sep or not colon or not name:
        raise ValueError(f"--real expects NAME=TASK_DIR:KERNEL[@CASE], got {spec!r}")
    source, kernel_path = Path(task_dir), Path(kernel)
    if not (source / "task.toml").is_file() or not kernel_path.is_file():
        raise ValueError(f"--real {spec!r}: no task.toml in {source} or no file {kernel_path}")
    target = root / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("candidates", "__pycache__"))
    shutil.copyfile(kernel_path, target / "candidate.py")
    data = tomllib.loads((target / "task.toml").read_text())
    cases = data.get("cases", [])
    chosen = [c for c in cases if c.get("name") == case_name] if case_name else cases[:1]
    if not chosen:
        raise ValueError(f"--real {spec!r}: the task has no case {case_name!r}")
    data["cases"] = [{**chosen[0], "name": name}]
    (target / "task.toml").write_text(tomli_w.dumps(data))
    return name, target


def import_candidate(path: Path, entry: str) -> tuple[Any, Any]:
    spec = importlib.util.spec_from_file_location(f"kb_bench_candidate_{path.parent.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module, getattr(module, entry)


# --- one fresh evaluation (child process) ----------------------------------------------------------------


def _simple_check(ctx: Any, case: Any, before: Any, returned: Any, after: Any) -> bool:
    import torch

    expected = ctx.reference(*before[0], **before[1])
    return bool(
        isinstance(returned, torch.Tensor) and torch.allclose(returned, expected, rtol=1e-4, atol=1e-5)
    )


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`--timing key=value` pairs into TimingConfig keyword arguments (numbers parsed, tuples comma-split)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"error: --timing expects key=value, got {item!r}")
        if key == "regimes":
            out[key] = tuple(v for v in value.split(",") if v)
        elif value.lower() in ("true", "false"):
            out[key] = value.lower() == "true"
        else:
            try:
                out[key] = int(value)
            except ValueError:
                try:
                    out[key] = float(value)
                except ValueError as exc:
                    raise SystemExit(f"error: --timing {key} needs a number, got {value!r}") from exc
    return out


def _timing_record(timing: Any) -> dict[str, Any]:
    from evaluators import stats

    return {
        "candidate_us": timing.candidate.median_us,
        "reference_us": timing.reference.median_us,
        "speedup": timing.speedup,
        "ci": [timing.ci_low, timing.ci_high],
        "half_width": stats.relative_half_width(timing.speedup, timing.ci_low, timing.ci_high),
        "claim_low": timing.claim_low,
        "samples": timing.candidate.samples + timing.candidate.outliers,
        "cv_within": timing.candidate.cv,
    }


def run_child(
    task_dir: Path,
    index: int,
    overrides: dict[str, Any],
    simple_check: bool = False,
    triton_benches: tuple[str, ...] = ("do_bench", "do_bench_cudagraph"),
) -> dict[str, Any]:
    import torch
    import triton
    from triton.testing import do_bench, do_bench_cudagraph

    from evaluators.backends import require_backend
    from evaluators.config import EvalConfig, TimingConfig
    from evaluators.context import JudgeContext
    from evaluators.task import load_task
    from evaluators.timing import time_cases

    check_call: Any = _simple_check
    if not simple_check:
        with contextlib.suppress(ImportError):  # without the judge's module, keep the plain allclose check
            from evaluators.correctness import check_call

    task = load_task(task_dir)
    case = task.cases[0]
    backend = require_backend("triton-cuda")
    backend.init_device()
    hardware = backend.hardware()
    module, candidate = import_candidate(task_dir / "candidate.py", task.entry)
    reference = task.load_reference()
    config = EvalConfig(timing=TimingConfig(**overrides))
    seeds = tuple(secrets.randbits(31) for _ in range(3))
    ctx = JudgeContext(
        task=task,
        backend=backend,
        config=config,
        seeds=seeds,
        reference=reference,
        candidate=candidate,
        candidate_module=module,
        candidate_path=task_dir / "candidate.py",
        candidate_source=(task_dir / "candidate.py").read_text(),
        log=lambda line: None,
        notes={"hardware": hardware},
    )
    # Compile and check once, as the correctness stage would before timing.
    ref_args, ref_kwargs = task.make_inputs(case, seeds[0], backend.device)
    cand_args, cand_kwargs = task.make_inputs(case, seeds[1], backend.device)
    if not first_call_agrees(ctx, case, check_call, (ref_args, ref_kwargs)):
        raise SystemExit(f"candidate of {task.name} disagrees with its reference")
    torch.cuda.synchronize()

    record: dict[str, Any] = {"kernel": case.name, "index": index, "methods": {}, "log": []}
    # The same judge once more, as a wall task: the wall regime scored, alone.
    wall_ctx = dataclasses.replace(
        ctx,
        task=dataclasses.replace(task, regime="wall"),
        config=EvalConfig(timing=dataclasses.replace(config.timing, regimes=("wall",))),
    )
    names = {("graph", "graph"): "kernelbot-graph", ("graph", "wall"): "kernelbot-wall-look"}
    names[("wall", "wall")] = "kernelbot-wall"

    def ours() -> None:
        start = time.perf_counter()
        for judge in (ctx, wall_ctx):
            judge = dataclasses.replace(judge, log=record["log"].append)
            report = time_cases(judge, [case], check_call=check_call)
            if not report.passed:
                raise SystemExit(f"timing failed: {report.reason}")
            for regime, timing in report.timings[case.name].items():
                record["methods"][names[(judge.task.regime, regime)]] = _timing_record(timing)
        record["timing_stage_s"] = time.perf_counter() - start

    def triton_bench(name: str, bench: Any) -> None:
        start = time.perf_counter()
        ref_ms = bench(lambda: reference(*ref_args, **ref_kwargs), return_mode="median")
        cand_ms = bench(lambda: candidate(*cand_args, **cand_kwargs), return_mode="median")
        record["methods"][name] = {
            "candidate_us": cand_ms * 1e3,
            "reference_us": ref_ms * 1e3,
            "speedup": ref_ms / cand_ms,
            "wall_s": time.perf_counter() - start,
        }

    benches = {"do_bench": do_bench, "do_bench_cudagraph": do_bench_cudagraph}
    steps = [ours] + [
        (lambda name=name: triton_bench(name, benches[name])) for name in triton_benches if name in benches
    ]
    shift = index % len(steps)  # rotate the order so no method always runs first (coldest)
    for step in steps[shift:] + steps[:shift]:
        step()
    record["device"] = hardware.device
    record["versions"] = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
    }
    return record


def first_call_agrees(ctx: Any, case: Any, check_call: Any, inputs: Any) -> bool:
    """The candidate's first call (its compilation) judged by `check_call` on copies of `inputs`: real
    kernels return tuples, write in place and need their dtype's tolerances, not one float allclose."""
    from evaluators.timing.inputs import clone_inputs
    from evaluators.timing.recheck import read_verdict

    before = clone_inputs(inputs)
    called = clone_inputs(inputs)
    returned = ctx.candidate(*called[0], **called[1])
    return read_verdict(check_call(ctx, case, before, returned, called))[0]


# --- driver ------------------------------------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    repo = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH", "")) if p)
    return env


def child_command(
    task_dir: Path, index: int, timing: list[str], simple_check: bool = False, triton_bench: str | None = None
) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(task_dir), "--index", str(index)]
    for item in timing:
        cmd += ["--timing", item]
    if simple_check:
        cmd.append("--simple-check")
    if triton_bench is not None:
        cmd += ["--triton-bench", triton_bench]
    return cmd


def parse_child_output(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    raise ValueError("the evaluation process printed no result line")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/stability.py",
        description="Cross-process CV of kernelbot's reported times and speedups, beside do_bench and "
        "do_bench_cudagraph.",
    )
    parser.add_argument("--out", type=Path, help="directory for stability.json, stability.md and the tasks")
    parser.add_argument("--evaluations", type=int, default=10, help="fresh processes per kernel (default 10)")
    parser.add_argument(
        "--kernels", default=",".join(KERNELS), help=f"comma-separated subset of {', '.join(KERNELS)}"
    )
    parser.add_argument(
        "--timing",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a TimingConfig field for kernelbot's timing, e.g. --timing cv_target=0.001",
    )
    parser.add_argument(
        "--simple-check",
        action="store_true",
        help="re-check the last timed call with allclose instead of evaluators.correctness.check_call",
    )
    parser.add_argument(
        "--triton-bench",
        default="do_bench,do_bench_cudagraph",
        help="triton.testing's timers to run beside: do_bench, do_bench_cudagraph (comma-separated) or none",
    )
    parser.add_argument(
        "--real",
        action="append",
        default=[],
        metavar="NAME=TASK_DIR:KERNEL[@CASE]",
        help="a real kernel beside the synthetic ones: a task (e.g. extracted by bench/fresh_tasks.py), "
        "a kernel for it (a search's best.py) and the case to time (default: its first)",
    )
    parser.add_argument("--child-timeout", type=float, default=600.0, help="seconds per evaluation process")
    parser.add_argument(
        "--dry-run", action="store_true", help="write the tasks and print the plan; run nothing"
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides = parse_overrides(args.timing)
    benches = tuple(b.strip() for b in args.triton_bench.split(",") if b.strip() not in ("", "none"))
    unknown_bench = [b for b in benches if b not in ("do_bench", "do_bench_cudagraph")]
    if unknown_bench:
        print(f"error: --triton-bench: unknown {unknown_bench}", file=sys.stderr)
        return 2
    if args.child is not None:
        record = run_child(args.child, args.index, overrides, args.simple_check, benches)
        print(RESULT_PREFIX + json.dumps(record), flush=True)
        return 0
    if args.out is None:
        print("error: --out DIR is required", file=sys.stderr)
        return 2
    names = [k.strip() for k in args.kernels.split(",") if k.strip() not in ("", "none")]
    unknown = [k for k in names if k not in KERNELS]
    if unknown:
        print(f"error: unknown kernel(s) {unknown}; choose from {', '.join(KERNELS)}", file=sys.stderr)
        return 2
    out: Path = args.out
    tasks = {name: write_task(out / "tasks" / name, name) for name in names}
    for spec in args.real:
        try:
            name, task_dir = write_real_task(out / "tasks", spec)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if name in tasks:
            print(f"error: --real {spec!r}: the name {name!r} is taken", file=sys.stderr)
            return 2
        tasks[name] = task_dir
        names.append(name)
    if not names:
        print("error: no kernel to time (--kernels none and no --real)", file=sys.stderr)
        return 2
    plan = [(i, name) for i in range(args.evaluations) for name in names]  # kernels interleaved over time
    bench_arg = ",".join(benches) or "none"
    if args.dry_run:
        for i, name in plan:
            print(" ".join(child_command(tasks[name], i, args.timing, args.simple_check, bench_arg)))
        return 0
    records: list[dict[str, Any]] = []
    meta = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "timing_overrides": overrides,
    }
    table = ""
    for i, name in plan:
        cmd = child_command(tasks[name], i, args.timing, args.simple_check, bench_arg)
        proc = run(cmd, env=_child_env(), timeout_s=args.child_timeout)
        if proc.timed_out:
            print(f"error: evaluation {i} of {name} ran past {args.child_timeout:g} s", file=sys.stderr)
            return 1
        if proc.returncode != 0:
            print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n", file=sys.stderr)
            print(f"error: evaluation {i} of {name} failed (exit {proc.returncode})", file=sys.stderr)
            return 1
        record = parse_child_output(proc.stdout)
        records.append(record)
        print(f"[{len(records)}/{len(plan)}] {name} #{i}: {progress_line(record)}", flush=True)
        table = write_results(out, records, meta)  # after every process: a run cut short keeps its numbers
    print(table)
    return 0


def progress_line(record: dict[str, Any]) -> str:
    parts = []
    for method, label in (("kernelbot-graph", "graph"), ("kernelbot-wall", "wall")):
        m = record["methods"].get(method, {})
        us, speedup = m.get("candidate_us", math.nan), m.get("speedup", math.nan)
        half = m.get("half_width")
        ci = f" ±{100 * half:.2f} %" if isinstance(half, float) and math.isfinite(half) else ""
        parts.append(f"{label} {us:.3f} µs, speedup {speedup:.4f}{ci}")
    return "; ".join(parts)


def write_results(out: Path, records: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """stability.json (meta, summary, every record) and stability.md; returns the markdown."""
    first = records[0]
    meta = {"device": first.get("device"), **first.get("versions", {}), **meta, "evaluations": len(records)}
    rows = summarize(records)
    out.mkdir(parents=True, exist_ok=True)
    (out / "stability.json").write_text(
        json.dumps({"meta": meta, "summary": [r.__dict__ for r in rows], "records": records}, indent=2)
    )
    table = markdown(rows, meta)
    (out / "stability.md").write_text(table)
    return table


if __name__ == "__main__":
    sys.exit(main())
