"""A tiny task and candidates for the isolation tests (pool, worker, faults, pipeline, eval CLI).

The task is deliberately small (a few hundred floats) so that the Triton interpreter judges a candidate in
well under a second; what these tests exercise is the process machinery around the judge, not the kernel.
"""

from __future__ import annotations

import atexit
import textwrap
from pathlib import Path

TASK_TOML = """\
name = "scale_shift"
entry = "scale_shift"
regime = "graph"
description = "y = 2 * x + 1 on a float32 vector"

[[cases]]
name = "n257"
n = 257

[[cases]]
name = "n1000"
n = 1000
"""

REFERENCE = """\
import torch


def scale_shift(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0 + 1.0
"""

INPUTS = """\
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(case["n"], generator=g, dtype=torch.float32).to(device),), {}
"""

KERNEL = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0 + 1.0, mask=mask)
"""

GOOD = (
    KERNEL
    + """

def scale_shift(x):
    out = torch.empty_like(x)
    n = x.numel()
    _scale_shift_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
    return out
"""
)

# Off by one: runs fine, gives wrong numbers.
WRONG = GOOD.replace("x * 2.0 + 1.0, mask=mask", "x * 2.0 + 2.0, mask=mask")


def write_task(root: Path, name: str = "scale_shift") -> Path:
    task = root / name
    task.mkdir(parents=True, exist_ok=True)
    (task / "task.toml").write_text(TASK_TOML)
    (task / "reference.py").write_text(REFERENCE)
    (task / "inputs.py").write_text(INPUTS)
    return task


def with_entry(body: str) -> str:
    """A candidate: the good kernel plus a custom host function `scale_shift` (body is its indented code)."""
    return (
        KERNEL + "\n\ndef scale_shift(x):\n" + textwrap.indent(textwrap.dedent(body).strip() + "\n", "    ")
    )


def at_import(statements: str) -> str:
    """The good candidate with extra module-level statements run when it is imported (the compile stage)."""
    return textwrap.dedent(statements).strip() + "\n\n" + GOOD


_shared: list = []


def shared_pool():
    """One interpreter WorkerPool for the isolation test modules of one pytest run (its warm-up is paid once).

    Tests that change the environment a pool starts with, or kill its parts, make their own pool instead.
    """
    from evaluators.pool import WorkerPool

    if not _shared or _shared[0]._closed:
        _shared[:] = [WorkerPool("triton-interpret", size=2)]
        atexit.register(_shared[0].close)
    return _shared[0]
