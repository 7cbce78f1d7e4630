"""Pool several bench/vs_compile.py runs: per task, candidate, case and pairing, the speedup of every run
with its mean, lowest and highest.

One vs_compile.py process reads "best vs compile" to about 0.1 % within itself, but on a bandwidth-bound case
the same two kernels land a few tenths of a percent apart from one process (or one machine) to the next. A
claim at that level needs several fresh processes, each with the A/A yardstick (`--twin`), read together:

    PYTHONPATH=. python bench/vs_compile_pool.py out/run_1 out/run_2 out/run_3 [--regime wall] [--out P.md]

Each argument is a vs_compile.json or a folder holding one. Candidates are told apart by file name (a search
writes best.py for every task, so the task is part of the key).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PAIR_LABELS = {
    "best_vs_eager": "best vs eager",
    "compile_vs_eager": "compile vs eager",
    "best_vs_compile": "best vs compile",
    "compile_vs_compile": "A/A (compile vs compile)",
}


@dataclass
class Pooled:
    speedups: list[float] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.speedups)


def load_runs(paths: list[Path]) -> list[dict[str, Any]]:
    """The vs_compile.json documents behind `paths`; ValueError names the first that is not one."""
    runs = []
    for path in paths:
        file = path / "vs_compile.json" if path.is_dir() else path
        try:
            doc = json.loads(file.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a vs_compile.json or a folder holding one ({exc})") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
            raise ValueError(f"{file}: no 'rows' list (is it bench/vs_compile.py's output?)")
        runs.append(doc)
    return runs


def pool(runs: list[dict[str, Any]], regime: str) -> dict[tuple[str, str, str, str], Pooled]:
    """(task, candidate file name, pairing, case) -> that regime's speedups over the runs, in run order. A
    pairing that did not pass in a run contributes nothing from that run."""
    pooled: dict[tuple[str, str, str, str], Pooled] = {}
    for run in runs:
        for row in run["rows"]:
            candidate = Path(row["candidate"]).name
            for pairing in PAIR_LABELS:
                timed = row.get(pairing)
                if not timed or not timed.get("passed"):
                    continue
                for case, regimes in timed["cases"].items():
                    if regime in regimes:
                        key = (row["task"], candidate, pairing, case)
                        pooled.setdefault(key, Pooled()).speedups.append(regimes[regime]["speedup"])
    return pooled


def markdown(pooled: dict[tuple[str, str, str, str], Pooled], regime: str, sources: list[str]) -> str:
    lines = [
        f"# torch.compile comparisons pooled over {len(sources)} runs ({regime} regime)",
        "",
        *(f"- {s}" for s in sources),
        "",
        "| task | candidate | case | pairing | runs | mean | lowest | highest | each run |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    order = list(PAIR_LABELS)
    for (task, candidate, pairing, case), p in sorted(
        pooled.items(), key=lambda kv: (kv[0][0], kv[0][3], order.index(kv[0][2]), kv[0][1])
    ):
        each = " ".join(f"{s:.4f}" for s in p.speedups)
        lines.append(
            f"| {task} | {candidate} | {case} | {PAIR_LABELS[pairing]} | {len(p.speedups)} | {p.mean:.4f}x "
            f"| {min(p.speedups):.4f}x | {max(p.speedups):.4f}x | {each} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/vs_compile_pool.py", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="vs_compile.json files or folders holding one")
    parser.add_argument("--regime", choices=("graph", "wall"), default="graph")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    try:
        runs = load_runs(args.runs)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pooled = pool(runs, args.regime)
    if not pooled:
        print(f"error: no passed timing in the {args.regime} regime in these runs", file=sys.stderr)
        return 1
    table = markdown(pooled, args.regime, [str(p) for p in args.runs])
    if args.out:
        args.out.write_text(table)
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
