"""bench/probes/stream_ceiling.py on the interpreter: what the reference writes is found (returned tensors and
arguments changed in place, each once), and the stream kernel reads every argument and writes every output
whole, whatever their sizes and dtypes."""

from __future__ import annotations

import torch

from bench.probes.stream_ceiling import stream_call, written_tensors


def _norm_in_place(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor) -> tuple:
    residual.add_(x)
    return x * weight, residual  # the residual comes back too: written once


def test_what_the_reference_writes_returned_and_in_place() -> None:
    x, residual, weight = torch.ones(3, 4), torch.zeros(3, 4), torch.full((4,), 2.0)
    written = written_tensors(_norm_in_place, (x, residual, weight), {})
    assert [tuple(t.shape) for t in written] == [(3, 4), (3, 4)]
    assert torch.equal(residual, torch.zeros(3, 4)), "the probe calls the reference on copies"


def test_the_stream_kernel_reads_every_argument_and_writes_every_output() -> None:
    a = torch.arange(5, dtype=torch.bfloat16)
    b = torch.full((2, 7), 10.0)  # the largest tensor sets the grid
    writes = [torch.empty(14, dtype=torch.float32), torch.empty(3, dtype=torch.float16)]
    x, y = stream_call([a, b], writes, block=4, warps=1)()
    expect = b.reshape(-1).clone()
    expect[:5] += a.float()
    assert torch.equal(x, expect)
    assert torch.equal(y, expect[:3].half())
