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


HARNESS = Path(__file__).with_name("naive_harness.py")


def _naive_verdicts(tmp_path: Path, argv: list[str], cpu_matmul: str) -> dict[str, dict]:
    env = {**os.environ, "TRITON_INTERPRET": "1", "TMPDIR": str(tmp_path), "KB_NAIVE_CPU_MATMUL": cpu_matmul}
    proc = subprocess.run(
        [sys.executable, str(HARNESS), *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {v["cheat"]: v for v in map(json.loads, proc.stdout.strip().splitlines())}


# "as-is": this machine's CPU; "reduced": one with AMX, whose fp32 matmuls follow the precision flags.
@pytest.mark.slow
@pytest.mark.parametrize("cpu_matmul", ["as-is", "reduced"])
def test_a_naive_harness_accepts_the_cheats(tmp_path: Path, cpu_matmul: str) -> None:
    argv = [str(part) for c in FOOLED for part in (task_dir(c.task), c.path)]
    verdicts = _naive_verdicts(tmp_path, argv, cpu_matmul)
    fooled = {name for name, v in verdicts.items() if v["passed"]}
    assert fooled == {c.file for c in FOOLED}, {
        n: v["reason"] for n, v in verdicts.items() if not v["passed"]
    }


def test_the_reduced_cpu_matmul_emulation_rounds_like_amx(tmp_path: Path) -> None:
    """The emulation is real: under "medium" a float32 product moves by bf16 rounding, under "highest" not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys, torch\n"
        f"sys.path.insert(0, {str(HARNESS.parent)!r})\n"
        "import naive_harness\n"
        "naive_harness.emulate_reduced_cpu_matmul()\n"
        "a, b = torch.randn(48, 32, dtype=torch.float64), torch.randn(32, 32, dtype=torch.float64)\n"
        "exact = a @ b\n"
        "for mode in ('highest', 'high', 'medium'):\n"
        "    torch.set_float32_matmul_precision(mode)\n"
        "    print(mode, float(((a.float() @ b.float()).double() - exact).abs().max()))\n"
    )
    proc = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    error = {mode: float(value) for mode, value in (line.split() for line in proc.stdout.splitlines())}
    assert error["highest"] < 1e-4
    assert 1e-4 < error["high"] < 2e-2  # TF32 inputs: 10 mantissa bits
    assert error["medium"] > 2e-2  # bf16 inputs: 7 mantissa bits, what broke the naive test on AMX CPUs
