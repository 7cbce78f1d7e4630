"""Shared test setup. Kernel tests on a machine without a GPU run through Triton's interpreter, which must be
selected before triton is first imported, hence at the very top of the test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")
    from evaluators.backends import triton_interpret_rounding

    triton_interpret_rounding.install()  # bfloat16 casts round as on a GPU, as in the evaluator's workers

# Workers spawned by the evaluator inherit the environment; keep their caches inside the test run.
os.environ.setdefault("KERNELBOT_HOME", os.path.join(os.environ.get("TMPDIR", "/tmp"), "kernelbot-test-home"))


@pytest.fixture(scope="session")
def example_target_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`kernelbot target example` on the bundled example's RMSNorm, every stage for real on the interpreter
    (tests/kernelbot/target/road.py): one run for the session, read by the tests of the report and of
    bench/target_acceptance.py. A test that changes it works on a copy."""
    from tests.kernelbot.target.road import target_example_rmsnorm

    return target_example_rmsnorm(tmp_path_factory.mktemp("example-target") / "example_rmsnorm")
