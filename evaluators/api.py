"""One-shot evaluation: a pool of one worker, closed afterwards. For scripts and the `kernelbot eval` command;
a search that judges many candidates keeps a WorkerPool open instead (the warm-up is paid once)."""

from __future__ import annotations

from pathlib import Path

from evaluators.candidate import Candidate
from evaluators.config import EvalConfig
from evaluators.pool import WorkerPool
from evaluators.result import EvalResult
from evaluators.task import Task, load_task


def evaluate_candidate(
    task: Task | str | Path, candidate: Candidate | str, config: EvalConfig | None = None
) -> EvalResult:
    """Judge one candidate with `config.backend`; raises only for a bad task or an unusable backend."""
    config = config or EvalConfig()
    task = task if isinstance(task, Task) else load_task(task)  # a bad task fails before a worker starts
    pool = WorkerPool(
        config.backend, size=1, device_index=config.device_index, config=config, replace_workers=False
    )
    with pool:
        return pool.evaluate(task, candidate, config=config)
