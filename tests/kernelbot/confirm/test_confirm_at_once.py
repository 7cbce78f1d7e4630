"""Several confirmation processes at once: how many a round starts, that they run together with their
results in order, and the confirmation's own lock for its workers (the samples take turns)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from evaluators.config import EvalConfig
from kernelbot.confirm.run import _Column, _next_processes, run_processes, workers_lock
from kernelbot.confirm.stoprule import StopRule


def test_a_round_starts_what_the_rule_asks_and_keeps_the_workers_busy_under_the_cap() -> None:
    rule = StopRule(min_processes=3, max_processes=6)
    fresh = _Column("eager", "eager", "eager")
    assert _next_processes(fresh, rule, at_once=3, open_columns=2) == 3  # the rule's minimum first
    fresh.processes = 3
    assert _next_processes(fresh, rule, at_once=3, open_columns=2) == 2  # 3 workers over 2 columns
    assert _next_processes(fresh, rule, at_once=3, open_columns=1) == 3
    assert _next_processes(fresh, rule, at_once=1, open_columns=2) == 1  # one at a time: one more
    fresh.processes = 5
    assert _next_processes(fresh, rule, at_once=3, open_columns=1) == 1  # never past max_processes


class _Pool:
    """A pool's evaluate as the confirmation calls it: records how many ran at once."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.running = self.most = 0
        self.lock = threading.Lock()

    def evaluate(self, task: object, source: str, *, config: EvalConfig) -> int:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.2)
        with self.lock:
            self.running -= 1
        return config.device_index


def test_processes_run_as_many_at_once_as_the_pool_has_workers_results_in_order() -> None:
    configs = [EvalConfig(device_index=i) for i in range(5)]
    pool = _Pool(size=3)
    assert run_processes(pool, None, "src", configs) == [0, 1, 2, 3, 4]
    assert pool.most == 3
    one = _Pool(size=1)
    assert run_processes(one, None, "src", configs[:2]) == [0, 1] and one.most == 1


def test_the_workers_lock_is_named_only_while_the_device_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELBOT_LOCK_DIR", str(tmp_path))
    with workers_lock(False) as name:
        assert name == ""
    with workers_lock(True) as name:
        assert name.startswith("confirm-")
        (tmp_path / f"{name}.lock").write_bytes(b"")  # as the first worker to take it creates it
    assert not (tmp_path / f"{name}.lock").exists()  # removed afterwards
    with workers_lock(True) as again:
        assert again != name  # one per confirmation
