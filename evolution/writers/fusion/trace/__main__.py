"""Trace a task's reference into ATen graphs and write the report as JSON (the fusion writer's subprocess).

python -m evolution.writers.fusion.trace TASK --out REPORT.json [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import sys
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
    code = main()  # an exception leaves the usual way, with its traceback
    # The report is written and the writer waits for this process to end: skip the interpreter's teardown of
    # torch, Dynamo and Inductor (seconds, once per trace).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
