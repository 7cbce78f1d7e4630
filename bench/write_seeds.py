"""Write the fusion seed (seed:fusion, default knobs) of each task directory to OUT/<task>.py, so that the
seeds of two versions of the generator can be timed against each other with bench/readable_parity.py.

    PYTHONPATH=. python bench/write_seeds.py OUT TASK_DIR [TASK_DIR ...] [--line-length 88]

For example, the kernels of this checkout against those of main, on the serving-shape tasks
(bench/fresh_tasks.py writes them), on a GPU:

    git worktree add /tmp/kb-main main
    (cd /tmp/kb-main && PYTHONPATH=. python bench/write_seeds.py /tmp/seeds-main bench-out/fresh/*/)
    PYTHONPATH=. python bench/write_seeds.py /tmp/seeds-new bench-out/fresh/*/
    PYTHONPATH=. python bench/readable_parity.py --out bench-out/seed_parity \\
        bench-out/fresh/sglang_decode_metadata=/tmp/seeds-main/sglang_decode_metadata.py=/tmp/seeds-new/sglang_decode_metadata.py

Tasks the generator refuses are listed on stderr and skipped; the exit status is 1 when none was written.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from evaluators.task import load_task
from evolution.mutators.fusion_seed import FusionSeedMutator
from evolution.types import MutationRequest
from evolution.writers.fusion.writer import FusionWriter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("tasks", nargs="+", type=Path)
    parser.add_argument("--line-length", type=int, default=110)
    options = parser.parse_args(argv)
    options.out.mkdir(parents=True, exist_ok=True)
    writer = FusionWriter(line_length=options.line_length)
    written = 0
    for task_dir in options.tasks:
        outcome = asyncio.run(FusionSeedMutator(writer).mutate(MutationRequest(load_task(task_dir), None)))
        if not outcome.child_source:
            print(f"{task_dir.name}: no seed ({outcome.error})", file=sys.stderr)
            continue
        (options.out / f"{task_dir.name}.py").write_text(outcome.child_source)
        written += 1
    print(f"{written} seeds in {options.out}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
