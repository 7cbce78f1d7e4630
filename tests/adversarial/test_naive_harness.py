"""The cheats are real: a naive harness (naive_harness.py) accepts every one that can run on this machine,
while the evaluator rejects all of them (test_cheats.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from suite import CHEATS_BY_CLASS, TIMING_CHEATS, task_dir

# c06b attacks the evaluator's own modules, which the naive harness does not use; c01 needs the CUDA caching
# allocator's reuse (glibc reuses a freed block only sometimes: see test_gpu_cheats); c11c and the timing
# cheats are left out to keep this test short.
SKIPPED = {"c01_allocator_reuse", "c06b_patch_evaluator", "c11c_torch_compile", "c14_single_case"}
FOOLED = [c for c in (*CHEATS_BY_CLASS, *TIMING_CHEATS) if c.id not in SKIPPED]


@pytest.mark.slow
def test_a_naive_harness_accepts_the_cheats(tmp_path: Path) -> None:
    argv = [str(part) for c in FOOLED for part in (task_dir(c.task), c.path)]
    env = {**os.environ, "TRITON_INTERPRET": "1", "TMPDIR": str(tmp_path)}
    script = Path(__file__).with_name("naive_harness.py")
    proc = subprocess.run(
        [sys.executable, str(script), *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    verdicts = {v["cheat"]: v for v in map(json.loads, proc.stdout.strip().splitlines())}
    fooled = {name for name, v in verdicts.items() if v["passed"]}
    assert fooled == {c.file for c in FOOLED}, {
        n: v["reason"] for n, v in verdicts.items() if not v["passed"]
    }
