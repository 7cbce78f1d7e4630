"""The fusion generator on the seven engine functions, on a GPU: seed, a few variants, the evaluator's verdict
and speedups against eager PyTorch and against torch.compile, per case, written as JSON and Markdown.

    # here (the release cache is here): extract the tasks with the serving-shape specs
    PYTHONPATH=. python bench/fusion_smoke.py prepare bench-out/fusion_tasks [--specs bench/specs]
    # on the GPU (carry bench-out/fusion_tasks): one device call, about 10 minutes
    PYTHONPATH=. python bench/fusion_smoke.py run bench-out/fusion_tasks --out $OUT [--variants 3] \
        [--budget-s 540] [--only NAME,...]

`run`, per task (the JSON and the Markdown are rewritten after each, so a call stopped at its limit still
leaves every finished task):
1. trace the reference (the seven traces run in parallel, on the CPU) and write the fusion seed;
2. write up to --variants children with fusion:variant (one knob changed each, its first moves: the top-k
   methods for routers, then rows per program, whole rows vs blocks, warps...);
3. judge every candidate with the evaluator (correctness on every case and hidden dynamic sizes, then timing
   against eager in both regimes: speedup with a 95 % CI);
4. time the best correct candidate against torch.compile(reference) in one process (bench/vs_compile.py's
   measure: compile vs eager, and best vs compile, per case and regime).
OUT/fusion_smoke.json holds everything; OUT/fusion_smoke.md is the table to read first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench.fusion_targets import TARGETS, extract_target

SPECS = Path(__file__).resolve().parent / "specs"
READ_ME = [
    "How to read this: each task's fusion seed and variants were judged by the evaluator on this GPU.",
    "`vs eager` is the evaluator's speedup over the eager reference in the task's regime (graph:",
    "CUDA-graph replay; wall: launch-inclusive), geometric mean over cases. For the best correct candidate",
    "of each task, `best vs compile` per case is its time against torch.compile(reference) (default mode,",
    "dynamic=False) in one process: > 1.00x means faster than compile; [low, high] is the 95 % CI.",
    "Targets (issue 15): at or above compile on every case (CI low >= 0.99); >= 2x compile (graph) where",
    "compile leaves an op to ATen or emits several kernels, on cases with more than one row; >= 5x on",
    "sglang_biased_grouped_topk from 128 tokens up.",
]


# --- prepare ------------------------------------------------------------------------------------------------


def prepare(out: Path, specs: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for target in TARGETS:
        try:
            extract_target(target, out, specs)
            print(f"{target.name}: extracted", flush=True)
        except Exception as exc:  # report every target, then fail
            failed += 1
            print(f"{target.name}: FAILED: {type(exc).__name__}: {exc}", flush=True)
    return 1 if failed else 0


# --- run ----------------------------------------------------------------------------------------------------


def run(tasks: Path, out: Path, variants: int, budget_s: float, only: set[str]) -> int:
    from bench.meta import run_meta
    from evaluators.config import EvalConfig
    from evaluators.pool import WorkerPool
    from evaluators.task import load_task
    from evolution.writers.fusion.writer import FusionWriter

    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    meta = run_meta(variants=variants, budget_s=budget_s)
    names = [t.name for t in TARGETS if (tasks / t.name).is_dir() and (not only or t.name in only)]
    missing = [t.name for t in TARGETS if not (tasks / t.name).is_dir()]
    writer = FusionWriter()
    loaded = {name: load_task(tasks / name) for name in names}
    reports = asyncio.run(_trace_all(writer, loaded))  # the traces are CPU work: all at once
    records = {name: _Task(writer, loaded[name], reports[name]) for name in names}
    absent = [{"task": name, "status": "not extracted"} for name in missing]

    def left() -> float:
        return budget_s - (time.monotonic() - started)

    def save() -> None:
        _write(out, meta, absent + [r.record for r in records.values()], started)

    config = EvalConfig()
    pool = WorkerPool(config.backend, size=2, device_index=config.device_index, config=config)
    with pool:

        def judge(task: Any, source: str) -> Any:
            return pool.evaluate(task, source, config=config)

        # 1. every task's seed and its comparison with torch.compile; 2. variants, round robin, while time
        # lasts; 3. a variant that beat its seed is compared with torch.compile too.
        for state in records.values():
            state.guarded(lambda s=state: s.seed(judge), left() > 45, "the budget ran out before the seed")
            state.guarded(lambda s=state: s.compare_best(), left() > 45, "no time left for torch.compile")
            save()
        for step in range(1, variants + 1):
            for state in records.values():
                state.guarded(lambda s=state, k=step: s.variant(judge, k), left() > 60, "")
                save()
        for state in records.values():
            if state.best_changed():
                state.guarded(lambda s=state: s.compare_best(), left() > 45, "")
                save()
    save()
    print((out / "fusion_smoke.md").read_text())
    return 0 if all(r.record.get("status") == "ok" for r in records.values()) and not absent else 1


async def _trace_all(writer: Any, tasks: dict[str, Any]) -> dict[str, Any]:
    names = list(tasks)
    reports = await asyncio.gather(*(writer.report(tasks[n]) for n in names))
    return dict(zip(names, reports, strict=True))


class _Task:
    """One task's record: its candidates with their verdicts, the best one, its comparison with compile."""

    def __init__(self, writer: Any, task: Any, report: Any) -> None:
        from evolution.writers.fusion.knobs import Knobs, neighbours

        self.writer, self.task, self.report = writer, task, report
        self.record: dict[str, Any] = {
            "task": task.name,
            "regime": task.regime,
            "cases": [c.name for c in task.cases],
            "status": "not run",
            "candidates": [],
        }
        if report.error:
            self.record["status"] = f"trace failed: {report.error}"
        else:
            self.record["specialisations"] = [list(g.cases) for g in report.graphs]
        self.knobs = [Knobs(), *neighbours(Knobs(), uses_topk=writer.uses_selection(report))]
        self.next_knobs = 1  # the next knob set a variant tries
        self.shas: set[str] = set()
        self.compared_sha = ""

    def guarded(self, step: Any, allowed: bool, why_not: str) -> None:
        if self.report.error or self.record["status"].startswith("seed refused"):
            return
        if not allowed:
            if why_not:
                self.record.setdefault("skipped", []).append(why_not)
            return
        try:
            step()
        except Exception as exc:  # one step's crash is reported; the rest still runs
            self.record.setdefault("crashes", []).append(
                f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
            )

    def seed(self, judge: Any) -> None:
        self._candidate(judge, 0)
        self._update()

    def variant(self, judge: Any, index: int) -> None:
        """The next knob set whose code differs from every candidate so far (a knob that changes nothing
        for this reference, or has no kernel for it, is passed over)."""
        while self.next_knobs < len(self.knobs) and self.record["candidates"]:
            position = self.next_knobs
            self.next_knobs += 1
            if self._candidate(judge, position):
                self._update()
                return

    def _candidate(self, judge: Any, index: int) -> bool:
        """Write and judge the candidate of knob set `index`; False when there is nothing new to judge."""
        from evolution.dedup import candidate_sha
        from evolution.writers.fusion.generate import GenerationError
        from evolution.writers.fusion.knobs import Knobs

        knobs = self.knobs[index]
        entry: dict[str, Any] = {
            "knobs": json.loads(knobs.key()),
            "role": "seed" if index == 0 else "variant",
        }
        if index:
            entry["changed"] = Knobs().changed(knobs)
        try:
            generated = asyncio.run(self.writer.write(self.task, self.report, knobs))
        except GenerationError as exc:
            if index == 0:
                entry["verdict"] = f"not generated: {exc}"
                self.record["candidates"].append(entry)
                self.record["status"] = f"seed refused: {exc}"
            else:
                self.record.setdefault("not_applicable", []).append(f"{entry['changed']}: {exc}")
            return False
        sha = candidate_sha(generated.source, self.task.entry)
        if sha in self.shas:
            return False
        self.shas.add(sha)
        entry["sha"] = sha
        entry.update(_verdict(judge(self.task, generated.source)))
        entry["source"] = generated.source
        self.record["candidates"].append(entry)
        return True

    def _correct(self) -> list[dict[str, Any]]:
        return [c for c in self.record["candidates"] if c.get("correct")]

    def _update(self) -> None:
        correct = self._correct()
        self.record["status"] = "ok" if correct else "no correct candidate"
        if correct:
            best = max(correct, key=lambda c: c.get("score", 0.0))
            self.record["best"] = {"changed": best.get("changed", "(the seed)"), "sha": best["sha"]}

    def best_changed(self) -> bool:
        best = self.record.get("best")
        return bool(best) and best["sha"] != self.compared_sha

    def compare_best(self) -> None:
        best = self.record.get("best")
        if not best:
            return
        source = next(c["source"] for c in self._correct() if c["sha"] == best["sha"])
        self.record["vs_compile"] = _vs_compile(self.task, source)
        self.record["vs_compile"]["candidate"] = best["changed"]
        self.compared_sha = best["sha"]


def _verdict(result: Any) -> dict[str, Any]:
    cases = {}
    for case in result.cases:
        cases[case.name] = {
            "passed": case.passed,
            "hidden": case.hidden,
            "max_abs_error": case.max_abs_error,
            "skipped": case.skipped,
            **{
                f"vs_eager_{regime}": {
                    "speedup": round(t.speedup, 3),
                    "ci": [round(t.ci_low, 3), round(t.ci_high, 3)],
                    "eager_us": round(t.reference.median_us, 2),
                    "candidate_us": round(t.candidate.median_us, 2),
                }
                for regime, t in case.timings.items()
            },
        }
    return {
        "stage": str(result.stage.value if hasattr(result.stage, "value") else result.stage),
        "correct": bool(result.correct),
        "passed": bool(result.passed),
        "score": round(float(result.score), 3),
        "reason": result.reason,
        "hacks": [f"{h.kind}: {h.evidence}" for h in result.hacks],
        "cases": cases,
    }


def _vs_compile(task: Any, source: str) -> dict[str, Any]:
    import tempfile

    from bench.vs_compile import measure

    with tempfile.TemporaryDirectory(prefix="kb-fusion-smoke-") as workdir:
        path = Path(workdir) / "best.py"
        path.write_text(source)
        try:
            measured = measure(task.root, path, pairings=("compile_vs_eager", "best_vs_compile"))
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
    measured.pop("candidate", None)
    return measured


# --- output -------------------------------------------------------------------------------------------------


def _write(out: Path, meta: dict[str, Any], records: list[dict[str, Any]], started: float) -> None:
    meta = {**meta, "elapsed_s": round(time.monotonic() - started, 1)}
    (out / "fusion_smoke.json").write_text(
        json.dumps({"meta": meta, "tasks": records}, indent=2, default=str)
    )
    (out / "fusion_smoke.md").write_text(markdown(meta, records))


def markdown(meta: dict[str, Any], records: list[dict[str, Any]]) -> str:
    lines = [
        "# Fusion generator smoke run",
        "",
        f"- GPU: {meta.get('device')}; torch {meta.get('torch')}, triton {meta.get('triton')}",
        f"- date: {meta.get('date')}",
        f"- command: `{meta.get('command')}`; {meta.get('elapsed_s')} s",
        "",
        *READ_ME,
        "",
        "## Candidates",
        "",
        "| task | candidate | verdict | score (vs eager, task regime) | failing case / reason |",
        "| --- | --- | --- | --- | --- |",
    ]
    for record in records:
        if "candidates" not in record:
            lines.append(f"| {record['task']} | - | {record.get('status')} | | |")
            continue
        for c in record["candidates"]:
            label = "seed" if c["role"] == "seed" else c.get("changed", "")
            if "correct" not in c:
                lines.append(f"| {record['task']} | {label} | {c.get('verdict', '')} | | |")
                continue
            verdict = "correct" if c["correct"] else f"wrong ({c['stage']})"
            failing = next((n for n, v in c["cases"].items() if not v["passed"] and not v["skipped"]), "")
            reason = "" if c["correct"] else (failing + ": " if failing else "") + str(c["reason"])[:140]
            lines.append(f"| {record['task']} | {label} | {verdict} | {c['score']:.3f} | {reason} |")
    lines += [
        "",
        "## Best candidate vs torch.compile, per case",
        "",
        "| task | best | case | regime | compile vs eager | **best vs compile** |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for record in records:
        measured = record.get("vs_compile")
        if not measured:
            continue
        if "error" in measured:
            lines.append(f"| {record['task']} | | | | timing failed: {measured['error'][:140]} | |")
            continue
        pairs = [measured.get("compile_vs_eager", {}), measured.get("best_vs_compile", {})]
        case_names = next((list(p.get("cases", {})) for p in pairs if p.get("cases")), [])
        for case in case_names:
            for regime in ("graph", "wall"):
                cells = []
                for pair in pairs:
                    t = pair.get("cases", {}).get(case, {}).get(regime)
                    cells.append(
                        "n/a" if t is None else f"{t['speedup']:.3f}x [{t['ci'][0]:.3f}, {t['ci'][1]:.3f}]"
                    )
                bold = "**" if regime == record.get("regime") else ""
                best = measured.get("candidate", "")
                lines.append(
                    f"| {record['task']} | {best} | {case} | {bold}{regime}{bold} | {cells[0]} | {cells[1]} |"
                )
        for pair_name, pair in zip(("compile_vs_eager", "best_vs_compile"), pairs, strict=True):
            if pair and not pair.get("passed", True):
                lines.append(
                    f"| {record['task']} | | | | {pair_name} failed: {str(pair.get('reason'))[:140]} | |"
                )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/fusion_smoke.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare", help="extract the seven tasks (needs the release cache)")
    prep.add_argument("tasks", type=Path)
    prep.add_argument("--specs", type=Path, default=SPECS)
    go = commands.add_parser("run", help="seed, variants, verdicts and timings (needs a GPU)")
    go.add_argument("tasks", type=Path)
    go.add_argument("--out", type=Path, required=True)
    go.add_argument("--variants", type=int, default=3)
    go.add_argument("--budget-s", type=float, default=540.0)
    go.add_argument("--only", default="", metavar="NAME[,NAME...]")
    options = parser.parse_args(argv)
    if options.command == "prepare":
        if not options.specs.is_dir():
            parser.error(f"no spec directory {options.specs} (the serving-shape specs live in bench/specs)")
        return prepare(options.tasks, options.specs)
    only = {n.strip() for n in options.only.split(",") if n.strip()}
    return run(options.tasks, options.out, options.variants, options.budget_s, only)


if __name__ == "__main__":
    sys.exit(main())
