"""`kernelbot target` on real releases, each bundle then reviewed as the engine's maintainers review a PR.

    PYTHONPATH=. python -m bench.target_acceptance --out OUT [--only NAME[,NAME...]] [--backend auto]
        [--time-limit 75s] [--iterations 50] [--confirm-processes N] [--workers N]
        [--sources .devsite/sources.tar.xz] [--review-only]

The functions are those the acceptance of mergeable PRs names: SGLang 0.5.23's GeluAndMul, RMSNorm (a norm
op) and apply_scaling_penalties (a function that is not an op, under @torch.compile), and two ops of
LMDeploy 0.18.0's pytorch/backends/default. Each runs as a user would run it, `kernelbot target PROFILE
--repo pypi:RELEASE --function F --out OUT/runs/NAME` (no seed, no LLM; drafted inputs, or a serving-shape
spec where the draft is known not to do), all at once; the evaluator's GPU lock serialises their timing.
`--review-only` reviews the runs already in OUT/runs.

Per bundle, the checks (kernelbot.integrate.review holds the shared ones):
- applies: `git apply --check` of pr/patch.diff on a clone of the release's tree at its tag;
- reference_kept: the patch removes no line of the file holding the function, and for LMDeploy touches
  nothing under pytorch/backends/default;
- slot: SGLang ops: a forward_triton added beside forward_native, the kernel under sglang/kernels/ops/;
  LMDeploy: a Triton<Op>Impl(Default<Op>Impl) under backends/cuda, the kernel under kernels/cuda; other
  functions: a guarded call in the function;
- guard: no integer literal in the guard that is a size of the task's cases;
- test: >= 2 dtypes (each one a task case checked), >= 4 shapes from >= 2 model families;
- benchmark: a benchmark script in the patch, timing eager, torch.compile and the current path;
- body: eager, torch.compile and current-path figures, or why each is missing; no sentence that states a
  regime or a check nobody observed;
- lines: no added line over the engine's limit;
- readable: the kernel module breaks none of kernelbot.integrate.readability's rules (no numbered or
  Inductor bookkeeping names, no two kernels with one body, no interpreter branch, no line over the
  engine's limit) and names the op, not the search (`search_accounts`).
A run that stops before a bundle is reported with its last line (a refusal is a result too: e.g. a call
into a compiled region whose kernel was not measured compiled).

Writes OUT/target_acceptance.json and OUT/target_acceptance.md (also printed). On a machine without a GPU
the runs check correctness through Triton's interpreter and time nothing; the body says so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from bench.meta import run_meta
from kernelbot.engines.current_path import FUSED_OP_CONVENTIONS

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "bench" / "target_specs"  # bench/specs holds the fresh tasks' specs, one per task


@dataclass(frozen=True)
class Target:
    name: str
    profile: str
    release: str
    function: str
    spec: str = ""  # bench/specs/<spec>.toml; none: the draft kernelbot guesses, as a user without one gets


SGLANG, LMDEPLOY = "sglang==0.5.23", "lmdeploy==0.18.0"
TARGETS = (
    Target("sglang_gelu_and_mul", "sglang", SGLANG, "sglang.srt.layers.activation:GeluAndMul.forward_native"),
    # RMSNorm's draft varies variance_size_override, whose branch the fusion generator cannot tell apart from
    # the others ("trace to different graphs that no argument kind or size test tells apart");
    # bench/target_specs/sglang_rmsnorm.toml keeps it at None.
    Target(
        "sglang_rmsnorm",
        "sglang",
        SGLANG,
        "sglang.srt.layers.layernorm:RMSNorm.forward_native",
        spec="sglang_rmsnorm",
    ),
    Target(
        "sglang_scaling_penalties",
        "sglang",
        SGLANG,
        "sglang.srt.sampling.penaltylib.repetition_penalty:apply_scaling_penalties",
    ),
    Target(
        "lmdeploy_rmsnorm",
        "lmdeploy",
        LMDEPLOY,
        "lmdeploy.pytorch.backends.default.norm:DefaultRMSNormImpl.forward",
    ),
    Target(
        "lmdeploy_silu_and_mul",
        "lmdeploy",
        LMDEPLOY,
        "lmdeploy.pytorch.backends.default.activation:DefaultSiluAndMulImpl.forward",
    ),
)

# Sentences a body may only carry with evidence behind them (issue: "claims nobody measured").
UNMEASURED = (
    re.compile(r"runs inside a captured CUDA graph(?![^.]*(assumed|observed|scan))"),
    re.compile(r"checked by kernelbot's evaluator"),
)


def run_targets(targets: list[Target], runs: Path, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    from bench.llm_free_acceptance import run_all

    logs = runs / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    jobs = {
        t.name: [
            sys.executable, "-m", "kernelbot.cli", "target", t.profile, "--repo", f"pypi:{t.release}",
            "--function", t.function, "--out", str(runs / t.name), "--backend", args.backend,
            "--time-limit", args.time_limit, "--iterations", str(args.iterations), "--benchmark-runs", "0",
            *(["--confirm-processes", str(args.confirm_processes)] if args.confirm_processes else []),
            *(["--workers-per-device", str(args.workers)] if args.workers else []),
            *(["--spec", str(SPECS / f"{t.spec}.toml")] if t.spec else []),
        ]
        for t in targets
    }  # fmt: skip
    return run_all(jobs, logs, "target", args.deadline)


def review(target: Target, run: Path) -> dict[str, Any]:
    """The checks above on one run directory: {"bundle": bool, "checks": {name: [problems]}, ...}."""
    from evaluators.static.facts import task_float_dtypes
    from evaluators.task import load_task
    from kernelbot.engines import load_profile
    from kernelbot.integrate.naming import op_name
    from kernelbot.integrate.readability import readability_problems, search_accounts
    from kernelbot.integrate.review import coverage_problems, guard_name, guard_size_literals, removed_lines

    state = tomllib.loads((run / "target.toml").read_text()) if (run / "target.toml").is_file() else {}
    stages = state.get("stages", {})
    failed = [f"{name}: {s.get('error', '')}" for name, s in stages.items() if s.get("status") == "failed"]
    patch_file, body_file = run / "pr" / "patch.diff", run / "pr" / "body.md"
    if not patch_file.is_file() or not body_file.is_file():
        return {"bundle": False, "why": "; ".join(failed) or "no bundle (the run did not reach propose)"}
    integrated = stages["integrate"]["outcome"]
    worktree = run / integrated.get("worktree", "worktree")
    patch, body = patch_file.read_text(), body_file.read_text()
    profile = load_profile(target.profile)
    module, _, qualname = target.function.partition(":")
    reference = f"{profile.source_root + '/' if profile.source_root else ''}{module.replace('.', '/')}.py"
    kernel_file = worktree / integrated["kernel_module"]
    task_dir = run / "task"
    checks: dict[str, list[str]] = {}

    checks["applies"] = _applies(run, patch)
    removed = removed_lines(patch)
    kept = [f"{path}: {n} line(s) removed" for path, n in removed.items() if path == reference and n]
    kept += [p for p in removed if "/pytorch/backends/default/" in p]
    checks["reference_kept"] = kept
    checks["slot"] = _slot_problems(target, qualname, integrated, patch)
    guard = guard_name(kernel_file)
    pinned = guard_size_literals(kernel_file, guard, task_dir)
    checks["guard"] = [f"{guard} names the task's sizes {pinned}"] if pinned else []
    task = load_task(task_dir)
    checks["test"] = coverage_problems(worktree / integrated["test_file"], task_float_dtypes(task))
    bench = integrated.get("bench_file") or ""
    bench_text = (worktree / bench).read_text() if bench and (worktree / bench).is_file() else ""
    checks["benchmark"] = (
        []
        if "current path (us)" in bench_text and "torch.compile (us)" in bench_text
        else ["no benchmark script"]
    )
    checks["body"] = _body_problems(body)
    width = profile.formatter.line_length
    added = [ln[1:] for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    checks["lines"] = [f"{len(ln)} > {width}: {ln[:60]}..." for ln in added if len(ln) > width]
    module_text = kernel_file.read_text()
    checks["readable"] = readability_problems(module_text, limit=width) + search_accounts(
        module_text, task.entry, op_name(qualname)
    )
    return {
        "bundle": True,
        "checks": checks,
        "passed": all(not v for v in checks.values()),
        "slot": integrated.get("slot", ""),
        "selection": integrated.get("selection", ""),
        "measured": stages.get("confirm", {}).get("outcome", {}).get("measured"),
    }


def _applies(run: Path, patch: str) -> list[str]:
    """`git apply --check` of the patch on a clone of the run's repository at the base commit."""
    from evaluators.subprocesses import run as run_command

    state = tomllib.loads((run / "target.toml").read_text()).get("repo", {})
    upstream = run / state.get("path", "upstream")
    with tempfile.TemporaryDirectory() as tmp:
        clone, diff = Path(tmp) / "clone", Path(tmp) / "change.diff"
        steps = [
            ["git", "clone", "-q", "--no-checkout", str(upstream), str(clone)],
            ["git", "-C", str(clone), "checkout", "-q", state.get("base_commit", "HEAD")],
            ["git", "-C", str(clone), "apply", "--check", str(diff)],
        ]
        diff.write_text(patch)
        for argv in steps:
            done = run_command(argv, timeout_s=300)
            if done.returncode != 0:
                return [f"{' '.join(argv[:4])}: {done.stderr.strip()[-300:]}"]
    return []


def _slot_problems(target: Target, qualname: str, integrated: dict[str, Any], patch: str) -> list[str]:
    kernel = integrated["kernel_module"]
    method = qualname.rpartition(".")[2]
    if target.profile in FUSED_OP_CONVENTIONS and method == "forward_native":
        ok = "+    def forward_triton(" in patch and "/kernels/ops/" in f"/{kernel}"
        return [] if ok else [f"no forward_triton backend, kernel under <package>/kernels/ops ({kernel})"]
    if target.profile == "lmdeploy" and ".backends.default." in target.function:
        impl = re.search(r"^\+class Triton\w*Impl\(Default\w*Impl\):", patch, re.M)
        ok = impl is not None and "pytorch/kernels/cuda/" in kernel
        return [] if ok else [f"no Triton<Op>Impl(Default<Op>Impl), kernel under kernels/cuda ({kernel})"]
    return [] if re.search(r"^\+\s+if can_use_\w+\(", patch, re.M) else ["no guarded call in the function"]


def _body_problems(body: str) -> list[str]:
    """Each baseline column of the confirmation (kernelbot.confirm.COLUMNS) has a row in the speed table, or a
    line saying why it was not measured, or the body says that no speed was measured at all; and no sentence
    states what nobody observed."""
    from kernelbot.confirm import COLUMNS
    from kernelbot.propose.sections import COLUMN_WORDS

    problems = [f"unmeasured claim: /{p.pattern}/" for p in UNMEASURED if p.search(body)]
    if "**No speed was measured**" in body:
        return problems
    for column in COLUMNS:
        words = re.escape(COLUMN_WORDS[column])  # as the body names it: "torch.compile", "current path"
        row = re.search(rf"^\|[^\n]*\| {words} \|", body, re.M)
        why = re.search(rf"^- {words} \([^\n]*\): not measured: ", body, re.M)
        if row is None and why is None:
            problems.append(f"no {COLUMN_WORDS[column]} column and no reason why")
    return problems


def markdown(report: dict[str, Any]) -> str:
    names = ["applies", "reference_kept", "slot", "guard", "test", "benchmark", "body", "lines", "readable"]
    lines = [
        "| target | bundle | " + " | ".join(names) + " | measured |",
        "| --- | --- | " + " | ".join("---" for _ in names) + " | --- |",
    ]
    for name, entry in report["targets"].items():
        if not entry.get("bundle"):
            lines.append(f"| {name} | no: {entry.get('why', '')[:160]} |" + " |" * (len(names) + 1))
            continue
        cells = ["ok" if not entry["checks"][n] else "; ".join(entry["checks"][n])[:120] for n in names]
        lines.append(f"| {name} | yes | " + " | ".join(cells) + f" | {entry.get('measured')} |")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench/target_acceptance.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default="", metavar="NAME[,NAME...]")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--time-limit", default="75s", help="each search's wall time")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument(
        "--confirm-processes", type=int, default=0, help="each run's processes per column (0: kernelbot's)"
    )
    parser.add_argument("--workers", type=int, default=0, help="each run's workers per GPU (0: kernelbot's)")
    parser.add_argument(
        "--deadline", type=float, default=560.0, help="stop runs still going after this many s"
    )
    parser.add_argument("--sources", type=Path, default=ROOT / ".devsite" / "sources.tar.xz")
    parser.add_argument("--review-only", action="store_true", help="review the runs already in OUT/runs")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    unknown = sorted(only - {t.name for t in TARGETS})
    if unknown:
        print(
            f"error: --only: unknown {unknown} (known: {', '.join(t.name for t in TARGETS)})", file=sys.stderr
        )
        return 2
    targets = [t for t in TARGETS if not only or t.name in only]
    runs = args.out / "runs"
    report: dict[str, Any] = {"meta": run_meta(), "targets": {}}
    if not args.review_only:
        from bench.llm_free_acceptance import unpack_sources

        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        )
        print(unpack_sources(args.sources), flush=True)
        report["runs"] = run_targets(targets, runs, args)
    for target in targets:
        try:
            report["targets"][target.name] = review(target, runs / target.name)
        except Exception as exc:  # one bundle's unreadable file is that target's result, not the bench's end
            report["targets"][target.name] = {
                "bundle": False,
                "why": f"review failed: {type(exc).__name__}: {exc}",
            }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "target_acceptance.json").write_text(json.dumps(report, indent=2, default=str))
    table = markdown(report)
    (args.out / "target_acceptance.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
