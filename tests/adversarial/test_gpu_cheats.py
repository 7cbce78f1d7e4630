"""The adversarial suite on a real GPU (backend triton-cuda): the proofs this CPU machine cannot give —
streams (3), persisting L2 (9), timing-based decisions (14, 15), graph-capture detection — plus every other
cheat and legitimate kernel again under the CUDA guards (profiler, caching allocator). Run by the lead on the
H200: `python -m pytest -m gpu tests/adversarial`."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from suite import (
    CHEATS,
    CHEATS_BY_CLASS,
    GPU_RUNTIME_CLASSES,
    LEGIT_KERNELS,
    TASK_TAMPER_CHEATS,
    TIMING_CHEATS,
    Cheat,
    Legit,
    checkout_pythonpath,
    describe,
    hack_numbers,
    task_dir,
)

from evaluators.config import EvalConfig
from evaluators.pool import WorkerPool

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (backend triton-cuda)"),
]
GPU_CONFIG = EvalConfig(backend="triton-cuda")
GPU_RUNTIME_ONLY = EvalConfig(backend="triton-cuda", static_checks=False)
ALL_CHEATS = (*CHEATS_BY_CLASS, *TIMING_CHEATS)


@pytest.fixture(scope="module")
def gpu_pool() -> Iterator[WorkerPool]:
    with WorkerPool("triton-cuda", size=1, config=GPU_CONFIG) as pool:
        yield pool


@pytest.mark.parametrize("cheat", ALL_CHEATS, ids=lambda c: c.id)
def test_runtime_layer_catches_cheat_on_gpu(gpu_pool: WorkerPool, cheat: Cheat) -> None:
    result = gpu_pool.evaluate(task_dir(cheat.task), cheat.source, config=GPU_RUNTIME_ONLY)
    assert not result.passed and result.score == 0.0, describe(result)
    expected = GPU_RUNTIME_CLASSES.get(cheat.id, {cheat.klass})
    assert expected & hack_numbers(result), describe(result)
    assert all(h.evidence.strip() for h in result.hacks)


@pytest.mark.parametrize("cheat", ALL_CHEATS, ids=lambda c: c.id)
def test_full_cascade_rejects_cheat_on_gpu(gpu_pool: WorkerPool, cheat: Cheat) -> None:
    result = gpu_pool.evaluate(task_dir(cheat.task), cheat.source)
    assert not result.passed and result.score == 0.0, describe(result)
    assert hack_numbers(result), describe(result)


@pytest.mark.parametrize("legit", LEGIT_KERNELS, ids=lambda k: k.id)
def test_legit_kernels_pass_and_are_timed_on_gpu(gpu_pool: WorkerPool, legit: Legit) -> None:
    result = gpu_pool.evaluate(task_dir(legit.task), legit.file.read_text())
    assert result.passed and not result.hacks, describe(result)
    assert result.score > 0.0 and result.speedup is not None, describe(result)


def test_allocator_reuse_fools_a_naive_harness_on_gpu(tmp_path: Path) -> None:
    cheat = next(c for c in CHEATS_BY_CLASS if c.id == "c01_allocator_reuse")
    script = Path(__file__).with_name("naive_harness.py")
    env = {**os.environ, "KB_NAIVE_DEVICE": "cuda"}
    proc = subprocess.run(
        [sys.executable, str(script), str(task_dir(cheat.task)), str(cheat.path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["passed"], proc.stdout


# --- the OS box's cases with the CUDA backend (test_os_sandbox.py runs its walls with both backends) --------


@pytest.mark.parametrize("cheat", TASK_TAMPER_CHEATS, ids=lambda c: c.id)
def test_a_task_rewritten_on_disk_is_restored_and_flagged_on_gpu(
    cheat: Cheat, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = tmp_path / cheat.task
    shutil.copytree(task_dir(cheat.task), task)
    before = {p.name: p.read_bytes() for p in task.iterdir() if p.is_file()}
    monkeypatch.setenv("KERNELBOT_SANDBOX", "off")  # the runtime check alone: the box would refuse the write
    with WorkerPool("triton-cuda", size=1, config=GPU_RUNTIME_ONLY) as pool:
        result = pool.evaluate(task, cheat.source, config=GPU_RUNTIME_ONLY)
    assert not result.passed and result.score == 0.0, describe(result)
    assert cheat.klass in hack_numbers(result), describe(result)
    assert {p.name: p.read_bytes() for p in task.iterdir() if p.is_file()} == before


def test_parent_secrets_reach_nothing_from_a_cuda_worker(tmp_path: Path) -> None:
    """`kernelbot eval --backend triton-cuda` started with sentinel secrets in its initial environment: the
    leaker runs in its box, finds no secret, and nothing it prints or raises holds one."""
    sentinels = {
        "GITHUB_TOKEN": f"ghp-sentinel-{secrets.token_hex(12)}",
        "KERNELBOT_LLM_API_KEY": f"sk-sentinel-{secrets.token_hex(12)}",
    }
    args = ["eval", str(task_dir("scale_add")), str(CHEATS / "s01_parent_secrets.py")]
    done = subprocess.run(
        [sys.executable, "-m", "kernelbot.cli", *args, "--backend", "triton-cuda", "--json", "--no-static"],
        env={**os.environ, **sentinels, "PYTHONPATH": checkout_pythonpath()},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (4, 5), done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert "loot:" in result["reason"]  # it ran and said what it found
    output = done.stdout + done.stderr
    assert [name for name, value in sentinels.items() if value in output] == []
