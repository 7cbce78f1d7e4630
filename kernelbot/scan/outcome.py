"""What a scan found and did: printed as plain lines (one per region listed, one per action) and written to
STATE/last-scan.json; STATE/last-run names the run directory of the scan's last target run (absent when
it ran none), for a workflow step that reports on it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kernelbot.scan.queue import RegionStatus
from kernelbot.scan.ranking import Ranking
from kernelbot.scan.refresh import RefreshPlan
from kernelbot.scan.runs import RegionRun

LAST_SCAN_FILE = "last-scan.json"
LAST_RUN_FILE = "last-run"


@dataclass
class RefreshOutcome:
    plan: RefreshPlan
    result: str  # what was done about it, in words

    def to_dict(self) -> dict[str, object]:
        return {
            "pr": self.plan.pr.number,
            "url": self.plan.pr.url,
            "target": self.plan.target,
            "action": self.plan.action.value,
            "reason": self.plan.reason,
            "result": self.result,
        }


@dataclass
class ScanOutcome:
    profile: str
    source: str
    base_sha: str
    branch: str
    state_dir: Path
    ranking: Ranking
    ranking_cached: bool
    forge_note: str
    regions: list[RegionStatus] = field(default_factory=list)
    left_out: int = 0  # regions the --only / --exclude patterns left out
    not_looked_at: int = 0  # ranked regions after the listed ones, once the scan had nothing left to do
    refreshes: list[RefreshOutcome] = field(default_factory=list)
    runs: list[RegionRun] = field(default_factory=list)
    summary: str = ""

    @property
    def last_run(self) -> Path | None:
        return self.runs[-1].run_dir if self.runs else None

    def to_dict(self) -> dict[str, object]:
        return {
            "profile": self.profile,
            "source": self.source,
            "base_sha": self.base_sha,
            "branch": self.branch,
            "state_dir": str(self.state_dir),
            "ranking": {
                "source": self.ranking.source,
                "note": self.ranking.note,
                "cached": self.ranking_cached,
                "regions": len(self.ranking.regions),
                "left_out": self.left_out,
            },
            "forge": self.forge_note,
            "regions": [
                {
                    "target": s.region.target,
                    "branch": s.branch,
                    "standing": s.standing.value,
                    "reason": s.reason,
                    "pr": s.pr.number if s.pr else None,
                    "evidence": s.region.describe(),
                }
                for s in self.regions
            ],
            "not_looked_at": self.not_looked_at,
            "refreshes": [r.to_dict() for r in self.refreshes],
            "runs": [r.to_dict() for r in self.runs],
            "run_dir": str(self.last_run) if self.last_run else None,
            "summary": self.summary,
        }

    def lines(self) -> list[str]:
        cached = " (the ranking of this commit from an earlier scan)" if self.ranking_cached else ""
        lines = [f"ranking: {self.ranking.note}{cached}"]
        if self.left_out:
            lines.append(f"  {self.left_out} region(s) left out by --only / --exclude")
        lines.append(f"pull requests: {self.forge_note}")
        for number, status in enumerate(self.regions, 1):
            lines.append(f"  {number}. {status.region.target} [{status.region.describe()}]")
            lines.append(f"     {status.standing.value}: {status.reason}")
        if self.not_looked_at:
            lines.append(f"  ... and {self.not_looked_at} more region(s) not looked at")
        for refresh in self.refreshes:
            lines.append(f"open PR #{refresh.plan.pr.number}: {refresh.plan.reason} -> {refresh.result}")
        lines.append(f"did: {self.summary}")
        return lines

    def write(self) -> None:
        _write_atomically(self.state_dir / LAST_SCAN_FILE, json.dumps(self.to_dict(), indent=2) + "\n")
        last_run = self.state_dir / LAST_RUN_FILE
        if self.last_run is not None:
            _write_atomically(last_run, f"{self.last_run}\n")
        else:
            last_run.unlink(missing_ok=True)


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
