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


def test_files_that_do_not_parse_are_named_not_skipped(
    engine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (engine / "eng" / "legacy.py").write_text('print "python 2"\n')
    (engine / "eng" / "blob.py").write_bytes(b"x = 1\x00\n")
    assert main(["scan", "--repo", str(engine)]) == 0
    out, err = capsys.readouterr()
    assert "eng.layers.attention.meta:update_metadata" in out  # the rest is still ranked
    assert "2 not parsed" in out
    flat = " ".join(err.split())
    assert "2 file(s) could not be parsed" in flat
    assert "eng/legacy.py: line 1:" in flat and "eng/blob.py:" in flat and "null bytes" in flat

    assert main(["scan", "--repo", str(engine), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert {u["path"] for u in payload["unparsed"]} == {"eng/legacy.py", "eng/blob.py"}
    assert payload["files"] == 8  # run.py, the packages' files, and the two broken ones; tests/ is not read


def test_a_repo_with_nothing_parseable_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = write_repo(tmp_path / "old", {"pkg/__init__.py": "print 'x'\n", "pkg/mod.py": "exec 'y'\n"})
    assert main(["scan", "--repo", str(broken)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "none of its 2 Python file(s) could be parsed" in err and "pkg/" in err
    empty = tmp_path / "empty"
    (empty / "docs").mkdir(parents=True)
    assert main(["scan", "--repo", str(empty)]) == 1
    assert "holds no Python file to rank" in capsys.readouterr().err


def test_qualified_names_are_printed_whole_at_80_columns(tmp_path: Path, capsys) -> None:
    deep = "engine_with_a_long_name/model_executor/layers/attention_backends/flash_attention_metadata"
    repo = write_repo(
        tmp_path / "repo",
        {
            "engine_with_a_long_name/__init__.py": "",
            "engine_with_a_long_name/model_executor/__init__.py": "",
            "engine_with_a_long_name/model_executor/layers/__init__.py": "",
            "engine_with_a_long_name/model_executor/layers/attention_backends/__init__.py": "",
            f"{deep}.py": """
                import torch


                class FlashAttentionMetadataBuilderForDecode:
                    def init_forward_metadata_for_cuda_graph_replay(self, seq_lens, cache, page_table):
                        cache.copy_(seq_lens + 1)
                        page_table[:, :4].copy_(torch.cumsum(cache, dim=0)[:, None].expand(-1, 4))
                        return cache.sum()
            """,
        },
    )
    target = (
        "engine_with_a_long_name.model_executor.layers.attention_backends.flash_attention_metadata:"
        "FlashAttentionMetadataBuilderForDecode.init_forward_metadata_for_cuda_graph_replay"
    )
    assert len(target) > 160
    assert main(["scan", "--repo", str(repo)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.endswith(f"  {target}") for line in lines), lines  # one piece, ready to copy
    assert lines[-1] == f"next: kernelbot extract --repo {repo} --function {target}"


@pytest.mark.slow
@pytest.mark.network
def test_scan_takes_a_pypi_release_as_extract_does(capsys: pytest.CaptureFixture[str]) -> None:
    from extractors.release_sources import fetch_release

    try:
        fetch_release(LIGER)  # the source cache, or the registry the first time
    except ExtractionError as exc:
        pytest.skip(f"cannot obtain {LIGER} (is the package registry reachable?): {exc}")
    assert main(["scan", "--repo", f"pypi:{LIGER}", "--top", "3", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["static"]) == 3 and payload["files"] > 100
    assert all(h["target"].startswith("liger_kernel.") for h in payload["static"])
    assert main(["scan", "--repo", f"pypi:{LIGER}", "--top", "1"]) == 0
    assert f"next: kernelbot extract --repo pypi:{LIGER} --function liger_kernel." in capsys.readouterr().out


LIGER = "liger_kernel==0.8.5"
