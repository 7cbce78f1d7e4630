"""Trace a task's reference into ATen graphs and write the report as JSON (the fusion writer's subprocess).

python -m evolution.writers.fusion.trace TASK --out REPORT.json [--device cpu]
"""

from __future__ import annotations

from evolution.writers.fusion.trace.task import trace_task
from evolution.writers.tracing.launch import end_traced_process, report_main

if __name__ == "__main__":
    end_traced_process(report_main(__doc__.splitlines()[0], trace_task))
