"""`kernelbot scan --profile P`: the periodic bot. Each scan ranks a repository's hot regions, keeps its open
PRs current and runs `kernelbot target` on the best region nobody has proposed yet (docs/scan.md).

loop.py        one scan, step by step (run_scan)
checkout.py    the repository, brought up to date at every scan
ranking.py     regions by measured time under the profile's benchmark, or by static evidence
forge_view.py  what the forge holds (the truth for PRs), read at every scan
queue.py       each region's standing: proposed, merged, refused, failed, eligible (pure)
refresh.py     each open PR: up to date, refresh, or hands off (pure)
runs.py        one target run for a region, and what the ledger keeps of it
ledger.py      STATE/ledger.sqlite, the cache of regions, rankings, runs, tasks, kernels and PRs
lock.py        one scan at a time per repository
outcome.py     what a scan found and did (printed, and STATE/last-scan.json)
options.py     the command line, parsed
"""

from kernelbot.scan.loop import run_scan
from kernelbot.scan.options import ScanOptions

__all__ = ["ScanOptions", "run_scan"]
