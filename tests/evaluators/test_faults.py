"""Fault injection: whatever a candidate does to its worker, that worker alone ends, the EvalResult says what
happened and where, and the very next (correct) candidate still passes through the same pool."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from pool_tasks import GOOD, at_import, shared_pool, with_entry, write_task

from evaluators.config import EvalConfig
from evaluators.pool import WorkerPool
from evaluators.result import EvalResult, Stage

# Static checks would reject most of these sources before they run (ctypes, signals, os._exit...); the point
# here is what happens when such code does run, so they are off for the faulty candidates.
UNCHECKED = EvalConfig(
    static_checks=False,
    compile_timeout_s=3.0,
    correctness_timeout_s=6.0,
    output_limit_mb=1,
    memory_limit_gb=2.0,
    log_limit_chars=2000,
)


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def pool() -> WorkerPool:
    return shared_pool()


def judged(pool: WorkerPool, task: Path, source: str, **config: object) -> EvalResult:
    result = pool.evaluate(task, source, config=dataclasses.replace(UNCHECKED, **config))
    assert not result.passed and result.score == 0.0
    return result


@pytest.fixture(autouse=True)
def pool_survives(request: pytest.FixtureRequest, task: Path):
    """After every fault: the next correct candidate passes in the same pool."""
    yield
    if request.node.get_closest_marker("gpu"):
        return  # the GPU tests check their own pool
    pool = request.getfixturevalue("pool")
    result = pool.evaluate(task, GOOD, config=EvalConfig(seeds_per_case=1))
    assert result.passed, f"{result.stage}: {result.reason}\n{result.logs}"
    assert result.score == 1.0 and result.speedup is None


def test_segfault_from_an_out_of_bounds_kernel_load(pool: WorkerPool, task: Path) -> None:
    # A real kernel bug: an unmasked load far outside the tensor (the interpreter reads host memory there).
    oob = GOOD.replace("x = tl.load(x_ptr + offs, mask=mask)", "x = tl.load(x_ptr + offs + (1 << 44))")
    r = judged(pool, task, oob)
    assert r.stage is Stage.COMPILE
    assert "SIGSEGV" in r.reason and "during compile" in r.reason
    assert "candidate.py" in r.logs  # faulthandler's stack, from the worker's own log, points at the kernel


def test_hang_in_native_sleep_is_killed_at_the_compile_budget(pool: WorkerPool, task: Path) -> None:
    r = judged(pool, task, at_import("import time\ntime.sleep(600)"), compile_timeout_s=1.0)
    assert r.stage is Stage.COMPILE
    assert r.reason == "timed out after 1 s in compile"
    assert 1.0 <= r.duration_s < 5.0


def test_python_infinite_loop_in_the_first_call(pool: WorkerPool, task: Path) -> None:
    r = judged(pool, task, with_entry("while True:\n    pass"), compile_timeout_s=1.0)
    assert r.stage is Stage.COMPILE and r.reason == "timed out after 1 s in compile"


def test_hang_after_the_first_call_is_killed_at_the_correctness_budget(pool: WorkerPool, task: Path) -> None:
    source = GOOD.replace(
        "def scale_shift(x):\n", "_calls = []\n\n\ndef scale_shift(x):\n    _calls.append(1)\n"
    )
    source = source.replace("    return out\n", "    while len(_calls) > 1:\n        pass\n    return out\n")
    r = judged(pool, task, source, correctness_timeout_s=1.5)
    assert r.stage is Stage.CORRECTNESS and r.reason == "timed out after 1.5 s in correctness"


def test_exception_gives_the_candidates_traceback(pool: WorkerPool, task: Path) -> None:
    r = judged(pool, task, with_entry("raise ValueError('block size too large for n')"))
    assert r.stage is Stage.COMPILE
    assert "ValueError: block size too large for n" in r.reason
    assert 'File "candidate.py"' in r.reason  # the candidate's frames, under a readable name


def test_import_error(pool: WorkerPool, task: Path) -> None:
    r = judged(pool, task, at_import("import no_such_module_for_kernelbot"))
    assert r.stage is Stage.COMPILE and "No module named 'no_such_module_for_kernelbot'" in r.reason


def test_syntax_error_stops_at_the_static_stage(pool: WorkerPool, task: Path) -> None:
    r = judged(pool, task, GOOD.replace("def scale_shift(x):", "def scale_shift(x)"))
    assert r.stage is Stage.STATIC and "does not parse" in r.reason


def test_stdout_flood_ends_with_sigxfsz_and_a_truncated_log(pool: WorkerPool, task: Path) -> None:
    r = judged(pool, task, at_import("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)"))
    assert r.stage is Stage.COMPILE
    assert "SIGXFSZ" in r.reason and "output flood" in r.reason
    assert len(r.logs) <= 2000 + 100  # log_limit_chars plus the truncation note


def test_huge_host_allocation_fails_inside_the_memory_cap(pool: WorkerPool, task: Path) -> None:
    r = judged(pool, task, at_import("import torch\nhog = torch.ones(3 << 30, dtype=torch.uint8)"))
    assert r.stage is Stage.COMPILE and "can't allocate memory" in r.reason


def test_exit_from_the_candidate(pool: WorkerPool, task: Path) -> None:
    r = judged(pool, task, at_import("import os\nos._exit(3)"))
    assert r.stage is Stage.COMPILE and "exited with code 3 during compile" in r.reason


def test_sigkill_looks_like_the_oom_killer(pool: WorkerPool, task: Path) -> None:
    # (os.kill is stopped by the sandbox; raise_signal stands in for the OOM killer's SIGKILL)
    r = judged(pool, task, at_import("import signal\nsignal.raise_signal(signal.SIGKILL)"))
    assert r.stage is Stage.COMPILE and "SIGKILL" in r.reason and "OOM" in r.reason


def test_forged_control_messages_are_flagged(pool: WorkerPool, task: Path) -> None:
    forge = """
import os
for fd in range(3, 300):
    try:
        os.write(fd, b'{"kind": "result", "nonce": "guess", "body": {}}\\n')
    except OSError:
        pass
"""
    r = judged(pool, task, at_import(forge))
    assert [h.kind for h in r.hacks] == ["sandbox_escape"]
    assert "wrong nonce" in r.reason


def test_stats_count_what_happened(pool: WorkerPool) -> None:
    stats = pool.stats
    assert stats.evaluated >= 2 * 12
    assert stats.crashed >= 4  # segfault, flood, exit, SIGKILL
    assert stats.timed_out >= 3
    assert stats.spawned >= stats.evaluated


# --- GPU faults: run by the lead on the H200 (skipped on CPU machines) -------------------------------------


@pytest.fixture(scope="module")
def gpu_pool() -> WorkerPool:
    with WorkerPool("triton-cuda", size=2) as pool:
        yield pool


def _then_the_pool_still_works(pool: WorkerPool, task: Path) -> None:
    result = pool.evaluate(task, GOOD, config=EvalConfig(seeds_per_case=1))
    assert result.passed and result.stage is Stage.TIMING, f"{result.reason}\n{result.logs}"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU faults need a CUDA GPU")
def test_gpu_illegal_address_poisons_only_its_worker(gpu_pool: WorkerPool, task: Path) -> None:
    source = GOOD.replace("tl.store(out_ptr + offs,", "tl.store(out_ptr + offs + (1 << 40),").replace(
        ", mask=mask)\n", ")\n"
    )
    r = gpu_pool.evaluate(task, source, config=UNCHECKED)
    assert not r.passed and r.stage is Stage.COMPILE
    assert "illegal" in r.reason.lower() or "CUDA" in r.reason
    _then_the_pool_still_works(gpu_pool, task)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU faults need a CUDA GPU")
def test_gpu_out_of_memory(gpu_pool: WorkerPool, task: Path) -> None:
    source = at_import("import torch\nhog = torch.empty(1 << 46, dtype=torch.uint8, device='cuda')")
    r = gpu_pool.evaluate(task, source, config=UNCHECKED)
    assert not r.passed and r.stage is Stage.COMPILE and "out of memory" in r.reason.lower()
    _then_the_pool_still_works(gpu_pool, task)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU faults need a CUDA GPU")
def test_gpu_kernel_that_never_ends_is_killed(gpu_pool: WorkerPool, task: Path) -> None:
    spin = """
@triton.jit
def _spin_kernel(flag_ptr):
    while tl.load(flag_ptr, volatile=True) == 0:
        pass
"""
    source = with_entry(
        "flag = torch.zeros(1, dtype=torch.int32, device=x.device)\n_spin_kernel[(1,)](flag)\nreturn x"
    )
    source = source.replace("\n\ndef scale_shift", spin + "\n\ndef scale_shift")
    r = gpu_pool.evaluate(task, source, config=dataclasses.replace(UNCHECKED, compile_timeout_s=20.0))
    assert not r.passed and r.stage is Stage.COMPILE and r.reason == "timed out after 20 s in compile"
    _then_the_pool_still_works(gpu_pool, task)
