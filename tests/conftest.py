"""Shared test setup. Kernel tests on a machine without a GPU run through Triton's interpreter, which must be
selected before triton is first imported, hence at the very top of the test session."""

from __future__ import annotations

import os

import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")
    from evaluators.backends import triton_interpret_rounding

    triton_interpret_rounding.install()  # bfloat16 casts round as on a GPU, as in the evaluator's workers

# Workers spawned by the evaluator inherit the environment; keep their caches inside the test run.
os.environ.setdefault("KERNELBOT_HOME", os.path.join(os.environ.get("TMPDIR", "/tmp"), "kernelbot-test-home"))
