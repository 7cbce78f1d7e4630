"""The run report: one self-contained HTML page showing what a `kernelbot evolve` or `kernelbot target` run
did (growth, throughput, failures, the winner's speedups, lineage and code; for target runs the stages, tests,
end-to-end benchmark and PR body).

    path = write_report(Path("runs/silu"))          # runs/silu/report.html
    html = build_report(Path("runs/silu"))
"""

from __future__ import annotations

from kernelbot.report.build import REPORT_FILE, ReportError, build_report, sections_of, write_report

__all__ = ["REPORT_FILE", "ReportError", "build_report", "sections_of", "write_report"]
