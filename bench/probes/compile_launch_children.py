"""Write the Inductor seed of a task and the children `tune:compile` makes of it, one file each, for a
sweep against torch.compile (`bench/vs_compile.py --compile-only --out OUT TASK=OUT_DIR/seed.py
TASK=OUT_DIR/child0.py ...`): how far the seed's launch is from compile's at each shape, and whether
compile's launch closes it.

    PYTHONPATH=. python bench/probes/compile_launch_children.py TASK_DIR OUT_DIR

On the GPU: the seed is captured and compile's launches recorded by the search's own subprocesses
(evolution.writers.inductor.capture and .compile_launches, started as the search starts them, in a box),
and both reports are kept in OUT_DIR beside the candidates. children.txt lists each child's cases and knobs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from evaluators.gpu_lock import lock_dir
from evaluators.task import load_task
from evolution.mutators.compile_launch import launch_changes
from evolution.mutators.tuning_sites import ParsedCandidate
from evolution.writers.inductor.compile_launches import CompileLaunchReport
from evolution.writers.inductor.model import CaptureReport
from evolution.writers.inductor.render import render_candidate
from evolution.writers.tracing.launch import run_tracer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    task = load_task(args.task)
    capture_json, launches_json = args.out / "capture.json", args.out / "compile_launches.json"
    for module, out in (("capture", capture_json), ("compile_launches", launches_json)):
        # In the box and allow-listed environment the search starts them in: the reference is repo code.
        with tempfile.TemporaryDirectory(prefix="kb-probe-") as workdir:
            done = asyncio.run(
                run_tracer(
                    f"evolution.writers.inductor.{module}",
                    args.task.resolve(),
                    Path(workdir),
                    what=f"the probe's {module}",
                    timeout_s=900,
                    args=("--device", args.device),
                    gpu=args.device.startswith("cuda"),
                    writable=(lock_dir(),),
                )
            )
        if done.report is None:
            print(f"{module} failed (exit {done.returncode}): {done.stderr[-2000:]}", file=sys.stderr)
            return 1
        out.write_text(done.report)
    capture = CaptureReport.from_json(capture_json.read_text())
    if capture.error:
        print(f"no Inductor seed: {capture.error}", file=sys.stderr)
        return 1
    seed = render_candidate(capture, task.name, task.entry)
    (args.out / "seed.py").write_text(seed)
    report = CompileLaunchReport.from_json(launches_json.read_text())
    if report.error:
        print(f"no compile launches: {report.error}", file=sys.stderr)
        return 1
    parsed = ParsedCandidate(seed)
    lines = [f"skipped: {name}: {why}" for name, why in report.skipped.items()]
    for index, change in enumerate(launch_changes(seed, parsed.sites(), report)):
        (args.out / f"child{index}.py").write_text(parsed.with_changes(change.changes))
        lines.append(f"child{index}: {', '.join(change.cases)}: {change.changes}")
    (args.out / "children.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
