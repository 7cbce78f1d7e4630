"""Trace a task's reference into ATen graphs and write the report as JSON (the fusion writer's subprocess).

python -m evolution.writers.fusion.trace TASK --out REPORT.json [--device cpu]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evolution.writers.fusion.trace.task import trace_task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evolution.writers.fusion.trace", description=__doc__.splitlines()[0]
    )
    parser.add_argument("task")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", required=True)
    options = parser.parse_args(argv)
    report = trace_task(options.task, options.device)
    Path(options.out).write_text(report.to_json())
    return 0


if __name__ == "__main__":
    from evolution.writers.tracing.launch import end_traced_process

    end_traced_process(main())
