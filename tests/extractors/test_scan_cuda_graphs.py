"""The profiler scan on a CUDA GPU: eager regions ranked by their kernels' GPU time, and kernels replayed from
a CUDA graph attributed to the regions that launched them while the graph was captured, each region marked
graph or eager. Needs a CUDA GPU (skipped elsewhere; the attribution itself is tested on CPU in
test_profile_attribution.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from extractors.scan_profile import profile_command
from tests.extractors.conftest import write_repo

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

REPO = {
    "eng/__init__.py": "",
    "eng/ops.py": """
        import torch


        def norm(x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


        def gate(x):
            return torch.softmax(x.float(), dim=-1).to(x.dtype)


        def step(x):
            return gate(norm(x))


        def eager_tail(x):
            return (x.float().sigmoid() * 3).sum(-1)
    """,
    "run.py": """
        import torch
        from eng.ops import eager_tail, step

        x = torch.randn(256, 4096, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step(x)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step(x)
        for _ in range(50):
            graph.replay()
        for _ in range(5):
            eager_tail(x)
        torch.cuda.synchronize()
    """,
}


def test_graph_replays_are_attributed_through_the_capture(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "engine", REPO)
    rows, cuda = profile_command(repo, "python run.py")
    assert cuda
    by_target = {r.target: r for r in rows}
    norm, gate, tail = by_target["eng.ops:norm"], by_target["eng.ops:gate"], by_target["eng.ops:eager_tail"]
    assert norm.graph_us > 0 and gate.graph_us > 0, rows
    assert norm.regime == gate.regime == "graph"
    assert tail.regime == "wall" and tail.device_us > 0 and tail.graph_us == 0
    assert norm.kernels >= 50  # one or more kernels per replay
