"""`kernelbot target PROFILE --function F`: from a function in a repository to a proposal a maintainer can
trust, in six recorded stages (kernelbot.target.stages) under one run directory.

A run directory that already holds a run of the same profile and function is continued at its first
unfinished stage (with or without --resume; --resume only insists that there is one), so a killed run loses
nothing and a finished search is never redone. The road itself is kernelbot.target.launch.run_target.
"""

from __future__ import annotations

from kernelbot.console import console
from kernelbot.target.launch import default_run_dir, run_target
from kernelbot.target.options import TargetOptions
from kernelbot.target.records import ProposeRecord
from kernelbot.target.state import TargetState

__all__ = ["default_run_dir", "run"]


def run(options: TargetOptions) -> int:
    _report(run_target(options))
    return 0


def _report(state: TargetState) -> None:
    propose = state.record(ProposeRecord)
    console.print(f"bundle: {state.resolve(propose.bundle)}", markup=False)
    pr = propose.pr
    if pr:
        console.print(f"pull request: {pr.action} {pr.url or ''}".rstrip(), markup=False)
