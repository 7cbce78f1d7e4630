"""Every example candidate compiles for the GPU target (sm_90), checked on CPU: the interpreter alone would
let through code that the Triton compiler rejects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from evaluators.sandbox import box_env

CHECKER = Path(__file__).parents[2] / "bench" / "cuda_compile_check.py"
# One realistic shape per task, plus the launch branches that compile to different code.
COMPILE_SHAPES = {
    "decode_metadata": [{"batch": 8, "context_len": 4096, "page_size": 16}],
    "moe_grouped_topk": [{"tokens": 128}, {"tokens": 4}],
    "rmsnorm_residual": [
        {"tokens": 8, "hidden": 4096, "dtype": "bfloat16"},
        {"tokens": 2, "hidden": 10000, "dtype": "float32"},
        {"tokens": 256, "hidden": 4096, "dtype": "bfloat16"},  # several rows per program
    ],
    "silu_and_mul": [
        {"tokens": 1, "d": 2048, "dtype": "bfloat16"},
        {"tokens": 256, "d": 2048, "dtype": "bfloat16"},  # past the small-batch thresholds
    ],
}


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU the kernel tests compile and run for real")
def test_every_candidate_compiles_for_sm90(load_harness, candidate_files, tmp_path):
    jobs = []
    for task_name, shapes in COMPILE_SHAPES.items():
        task_dir = load_harness(task_name).task.root
        for path in candidate_files(task_name):
            jobs += [{"task": str(task_dir), "candidate": str(path), "params": p} for p in shapes]
    # The candidates are imported unboxed (the compiler needs no GPU): no secret goes with them.
    env = {k: v for k, v in box_env().items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_CACHE_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "kernelbot-triton-cache"))
    proc = subprocess.run(
        [sys.executable, str(CHECKER)],
        input=json.dumps(jobs),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    compiled = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    kernels = {c["kernel"] for c in compiled}
    assert {
        "_silu_and_mul_kernel",
        "_silu_and_mul_flat_kernel",
        "_rmsnorm_residual_rows_kernel",
        "_rmsnorm_residual_chunked_kernel",
        "_rmsnorm_residual_kernel",
        "_rmsnorm_residual_static_kernel",
        "_biased_grouped_topk_kernel",
    } <= kernels
    assert {c["job"] for c in compiled} == set(range(len(jobs)))  # every job launched (and compiled) a kernel
    assert any(not c["cached"] for c in compiled)


def test_the_instruction_digest_reads_counts_not_order() -> None:
    """Two kernels whose statements reach the compiler in another order share the digest of their
    instruction counts (registers renumbered, lines moved), while their PTX digests differ; one more
    instruction changes it."""
    sys.path.insert(0, str(CHECKER.parent))
    try:
        import cuda_compile_check as check
    finally:
        sys.path.remove(str(CHECKER.parent))
    head, tail = ".visible .entry k(\n{\n", "$L__BB0_1:\n\tret;\n}"
    first = head + "\tmul.lo.s32 \t%r5, %r3, 28;\n\tshl.b32 \t%r7, %r3, 1;\n" + tail
    moved = head + "\tshl.b32 \t%r5, %r3, 1;\n\tmul.lo.s32 \t%r6, %r3, 28;\n" + tail
    more = first.replace("\tret;", "\tadd.s32 \t%r8, %r7, 1;\n\tret;")
    assert check._instruction_digest(first) == check._instruction_digest(moved)
    assert check._machine_code_digest(first, "k") != check._machine_code_digest(moved, "k")
    assert check._instruction_digest(first) != check._instruction_digest(more)
