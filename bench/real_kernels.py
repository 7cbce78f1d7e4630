"""Judge the real-kernel corpus (bench.real_kernel_corpus: LMDeploy's and Liger-Kernel's shipped Triton
kernels) on a GPU with the triton-cuda backend: accepted or not, and timed against the PyTorch original
(the task's reference) per case, in the task's regime and the other one.

    # here (package registry reachable): tasks at model sizes + assembled candidates, to carry
    python -m bench.real_kernels prepare --out .cache/real_kernels
    # on the H200 (no network): judge them; JSON + a markdown table under --out
    python -m bench.real_kernels run --prepared .cache/real_kernels --out $OUT

Or build on the machine itself from carried release sources (a kernelbot cache root: sources/ holding
the unpacked releases or their wheels under sources/downloads/):
    python -m bench.real_kernels pack --out .cache/kb_sources          # here: copy the unpacked releases
    python -m bench.real_kernels run --cache .cache/kb_sources --out $OUT

Results are written after every kernel, so a run cut short by its time limit keeps what it measured.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.real_kernel_corpus import CORPUS, TASKS, RealKernel, assemble, build_task, release_root

MANIFEST = "manifest.json"


# --- prepare / pack (where the releases can be had) -----------------------------------------------------


def prepare(out: Path, *, cache: Path | None, gpu: bool = True, only: list[str] | None = None) -> Path:
    """Tasks (GPU sizes unless gpu=False) under out/tasks/, candidates under out/candidates/."""
    kernels = _selected(only)
    (out / "candidates").mkdir(parents=True, exist_ok=True)
    entries = []
    for key in sorted({k.task for k in kernels}):
        build_task(TASKS[key], out / "tasks" / key, gpu=gpu, cache=cache)
    for kernel in kernels:
        (out / "candidates" / f"{kernel.id}.py").write_text(assemble(kernel, cache))
        entries.append({"id": kernel.id, "project": kernel.project, "task": kernel.task})
    (out / MANIFEST).write_text(json.dumps({"kernels": entries, "gpu_sizes": gpu}, indent=2) + "\n")
    return out


def pack(out: Path, cache: Path | None = None) -> Path:
    """Copy the corpus's unpacked releases (a few MB of .py files) into out/sources/, the layout
    release_root reads as a cache root; LMDeploy's wheel (over 100 MB) needs not travel."""
    sources = out / "sources"
    sources.mkdir(parents=True, exist_ok=True)
    for requirement in sorted({k.requirement for k in CORPUS}):
        root = release_root(requirement, cache)
        target = sources / root.name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(root, target)
    return out


# --- run (on the GPU) ------------------------------------------------------------------------------------


def run(
    prepared: Path,
    out: Path,
    *,
    device: int = 0,
    budget_s: float = 270.0,
    only: list[str] | None = None,
    backend: str = "triton-cuda",
) -> int:
    from evaluators.config import EvalConfig
    from evaluators.pool import WorkerPool

    manifest = json.loads((prepared / MANIFEST).read_text())
    entries = [e for e in manifest["kernels"] if not only or e["id"] in only]
    out.mkdir(parents=True, exist_ok=True)
    config = EvalConfig(backend=backend, device_index=device)
    started = time.monotonic()
    report: dict[str, Any] = {"date": datetime.date.today().isoformat(), "results": []}
    with WorkerPool(backend, size=1, device_index=device, config=config) as pool:
        for entry in entries:
            if time.monotonic() - started > budget_s:
                report["results"].append({**entry, "skipped": f"over the {budget_s:.0f} s budget"})
                continue
            source = (prepared / "candidates" / f"{entry['id']}.py").read_text()
            mark = time.monotonic()
            result = pool.evaluate(prepared / "tasks" / entry["task"], source, config=config)
            report["results"].append({**entry, "seconds": round(time.monotonic() - mark, 1), **_row(result)})
            report["hardware"] = _hardware(result)
            _write(out, report)
            print(f"{entry['id']}: {_verdict(report['results'][-1])}", flush=True)
    _write(out, report)
    return 0 if all(r.get("passed") for r in report["results"]) else 1


def _row(result: Any) -> dict[str, Any]:
    cases = []
    for case in result.cases:
        timings = {
            regime: {
                "reference_us": t.reference.median_us,
                "candidate_us": t.candidate.median_us,
                "reference_cv": t.reference.cv,
                "candidate_cv": t.candidate.cv,
                "speedup": t.speedup,
                "ci": [t.ci_low, t.ci_high],
            }
            for regime, t in case.timings.items()
        }
        cases.append(
            {
                "case": case.name,
                "params": case.params,
                "passed": case.passed,
                "hidden": case.hidden,
                "skipped": case.skipped,
                "max_abs_error": case.max_abs_error,
                "max_rel_error": case.max_rel_error,
                "timings": timings,
            }
        )
    return {
        "passed": result.passed,
        "stage": result.stage.value,
        "reason": result.reason,
        "regime": result.regime,
        "score": result.score,
        "speedup": result.speedup,
        "speedup_ci": list(result.speedup_ci) if result.speedup_ci else None,
        "hacks": [{"class": h.number, "kind": h.kind, "evidence": h.evidence} for h in result.hacks],
        "cases": cases,
        "log_tail": result.logs[-2000:],
    }


def _hardware(result: Any) -> dict[str, Any]:
    hw = result.hardware
    return {
        "device": hw.device,
        "driver": hw.driver,
        "runtime": hw.runtime,
        "torch": hw.torch,
        "triton": hw.triton,
    }


def _verdict(row: dict[str, Any]) -> str:
    if "skipped" in row:
        return f"skipped ({row['skipped']})"
    if row["hacks"]:
        return "FLAGGED " + "; ".join(f"#{h['class']} {h['kind']}" for h in row["hacks"])
    if not row["passed"]:
        return f"rejected at {row['stage']}: {row['reason'][:160]}"
    speedup = row["speedup"]
    return f"accepted, speedup {speedup:.3f}x" if speedup is not None else "accepted (not timed)"


def _write(out: Path, report: dict[str, Any]) -> None:
    (out / "real_kernels.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (out / "real_kernels.md").write_text(table(report))


def table(report: dict[str, Any]) -> str:
    """One line per kernel and case: the task's regime first (marked *), times in µs, speedup [95 % CI]."""
    hw = report.get("hardware", {})
    lines = [
        f"Real-kernel corpus on {hw.get('device', '?')} (torch {hw.get('torch', '?')}, triton "
        f"{hw.get('triton', '?')}), {report['date']}: speedup = PyTorch original / shipped kernel.",
        "",
        "| kernel | project | task | verdict | case | regime | PyTorch µs | kernel µs | speedup [CI] |",
        "| --- | --- | --- | --- | --- | --- | ---: | ---: | --- |",
    ]
    for row in report["results"]:
        head = f"| {row['id']} | {row['project']} | {row['task']} | {_verdict(row)}"
        timed = [
            (c, regime, t)
            for c in row.get("cases", [])
            for regime, t in sorted(c["timings"].items(), key=lambda i: i[0] != row["regime"])
        ]
        if not timed:
            lines.append(f"{head} | | | | | |")
            continue
        for case, regime, t in timed:
            mark = "*" if regime == row["regime"] else ""
            times = f"{t['reference_us']:.2f} | {t['candidate_us']:.2f}"
            speedup = f"{t['speedup']:.3f} [{t['ci'][0]:.3f}, {t['ci'][1]:.3f}]"
            lines.append(f"{head} | {case['case']} | {regime}{mark} | {times} | {speedup} |")
    return "\n".join(lines) + "\n"


# --- the command line ------------------------------------------------------------------------------------


def _selected(only: list[str] | None) -> list[RealKernel]:
    known = {k.id for k in CORPUS}
    unknown = sorted(set(only or ()) - known)
    if unknown:
        raise SystemExit(f"unknown corpus entries: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return [k for k in CORPUS if not only or k.id in only]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_prepare = sub.add_parser("prepare", help="tasks + candidates into --out (needs the releases)")
    p_prepare.add_argument("--out", type=Path, required=True)
    p_prepare.add_argument("--cache", type=Path, help="kernelbot cache root holding sources/ (default: ~)")
    p_prepare.add_argument("--ci-sizes", action="store_true", help="the CPU test sizes instead of the GPU's")
    p_prepare.add_argument("--only", nargs="*")
    p_pack = sub.add_parser("pack", help="copy the corpus's unpacked releases into --out/sources")
    p_pack.add_argument("--out", type=Path, required=True)
    p_run = sub.add_parser("run", help="judge the corpus with triton-cuda; JSON + table under --out")
    source = p_run.add_mutually_exclusive_group(required=True)
    source.add_argument("--prepared", type=Path, help="a directory written by `prepare`")
    source.add_argument("--cache", type=Path, help="a cache root with the releases (as `pack` writes)")
    p_run.add_argument("--out", type=Path, required=True)
    p_run.add_argument("--device", type=int, default=0)
    p_run.add_argument(
        "--budget-s", type=float, default=270.0, help="start no kernel after this many seconds"
    )
    p_run.add_argument("--only", nargs="*")
    p_run.add_argument("--backend", default="triton-cuda", help="triton-interpret: a CPU check of the script")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "prepare":
        prepare(args.out, cache=args.cache, gpu=not args.ci_sizes, only=args.only)
        print(f"prepared {args.out}")
        return 0
    if args.command == "pack":
        print(f"packed {pack(args.out)}")
        return 0
    _selected(args.only)
    if args.prepared is not None:
        return _run(args, args.prepared)
    with tempfile.TemporaryDirectory(
        prefix="kb-real-kernels-"
    ) as scratch:  # not under --out: few files return
        return _run(args, prepare(Path(scratch), cache=args.cache, gpu=args.backend != "triton-interpret"))


def _run(args: argparse.Namespace, prepared: Path) -> int:
    return run(
        prepared, args.out, device=args.device, budget_s=args.budget_s, only=args.only, backend=args.backend
    )


if __name__ == "__main__":
    sys.exit(main())
