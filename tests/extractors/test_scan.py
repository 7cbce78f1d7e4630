"""`kernelbot scan`: static evidence ranking and the torch.profiler ranking of a command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extractors.errors import ExtractionError
from extractors.scan_profile import profile_command
from extractors.scan_static import GatherHotspotEvidence, rank_static
from kernelbot.cli import main
from tests.extractors.conftest import write_repo

REPO = {
    "eng/__init__.py": "",
    "eng/layers/__init__.py": "",
    "eng/layers/attention/__init__.py": "",
    "eng/layers/attention/meta.py": """
        import torch


        def update_metadata(cache_seqlens, cu, page_table, req_to_token, idx, seq_lens, n):
            cache_seqlens.copy_(seq_lens + 1)
            cu[1:].copy_(torch.cumsum(cache_seqlens, dim=0))
            page_table[:, :n].copy_(req_to_token[idx[:, None], torch.arange(n)[None, :]])
            for i in range(idx.shape[0]):
                page_table[i, n:].fill_(0)
    """,
    "eng/utils.py": """
        import torch


        def big_matmul(a, b):
            return torch.matmul(a, b)


        def slow_tail(x):
            y = x.float().softmax(-1)
            y = y.clamp(0.0, 1.0).sum(-1)
            return y.to(x.dtype)
    """,
    "tests/test_meta.py": "def test_x():\n    pass\n",
    "run.py": """
        import torch
        from eng.utils import slow_tail, big_matmul

        x = torch.randn(64, 64)
        for _ in range(20):
            slow_tail(x)
        big_matmul(x, x)
    """,
}


@pytest.fixture
def engine(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "engine", REPO)


def test_gatherer_counts_ops_inplace_indexing_and_loops() -> None:
    import ast

    source = (
        "def f(x, b):\n    for i in range(3):\n        b[i].add_(x.sum())\n    return torch.cat([x, x])\n"
    )
    evidence = GatherHotspotEvidence.of(ast.parse(source).body[0])  # type: ignore[arg-type]
    assert (evidence.torch_ops, evidence.inplace, evidence.tensor_loops) == (3, 1, 1)
    assert evidence.indexing == 1


def test_static_ranking_puts_dense_inplace_metadata_first(engine: Path) -> None:
    ranked = rank_static(engine)
    assert ranked[0].target == "eng.layers.attention.meta:update_metadata"
    assert ranked[0].hot_path and ranked[0].inplace >= 4 and ranked[0].tensor_loops == 1
    assert all("test_" not in h.path for h in ranked)
    assert "eng.utils:big_matmul" not in {h.target for h in ranked}  # one op: nothing to fuse


@pytest.mark.slow
def test_profile_attributes_time_to_repo_functions(engine: Path) -> None:
    rows, cuda = profile_command(engine, "python run.py")
    assert not cuda
    by_target = {r.target: r for r in rows}
    assert by_target["eng.utils:slow_tail"].ops >= 20 * 4
    assert by_target["eng.utils:slow_tail"].time_us > 0
    assert abs(sum(r.share for r in rows) - 1.0) < 0.01


@pytest.mark.slow
def test_cli_json_and_bad_command(engine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["scan", "--repo", str(engine), "--json", "--top", "2", "--profile-cmd", "python run.py"]) == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["static"]) == 2 and payload["dynamic"]["measure"] == "cpu"
    # The ranking is by measured time, so the script's own module-level ops may come first on a busy machine.
    targets = [f["target"] for f in payload["dynamic"]["functions"]]
    assert any(t.startswith("eng.") for t in targets), targets
    with pytest.raises(ExtractionError, match="ran no PyTorch operator from code inside"):
        profile_command(engine, "python -c pass")
    assert main(["scan", "--repo", str(engine / "missing")]) == 1
