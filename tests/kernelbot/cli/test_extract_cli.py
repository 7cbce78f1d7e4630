"""End to end: `kernelbot extract` on the bundled example repository and on fixture repos."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
import torch

from evaluators.task import load_task
from extractors.extract import ExtractOptions, extract
from kernelbot.cli import main
from tests.extractors.conftest import write_repo

ROOT = Path(__file__).resolve().parents[3]
MINIREPO = ROOT / "examples" / "minirepo"
SPECS = ROOT / "tests" / "extractors" / "specs"

pytestmark = pytest.mark.skipif(not MINIREPO.is_dir(), reason="examples/minirepo is not in this checkout")


def run_cli(*args: str) -> int:
    return main([str(a) for a in args])


def test_decode_metadata_method_with_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "decode"
    code = run_cli(
        "extract",
        "--repo",
        MINIREPO,
        "--function",
        "minisglang.attention.flash_backend:FlashDecodeBackend.init_forward_metadata_replay",
        "--spec",
        SPECS / "minisglang_decode_metadata.toml",
        "--out",
        out,
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "self.page_table -> page_table" in printed and "writes observed:" in printed
    task = load_task(out)
    # No --regime: seq_lens_cpu stays on the CPU for the host code that reads it: the task is timed eagerly.
    assert task.regime == "wall" and [c.name for c in task.cases] == ["bs1", "bs8"]
    assert task.dynamic == ("bs",)
    assert task.source.qualname == "FlashDecodeBackend.init_forward_metadata_replay"
    assert len(task.source.commit) == 40  # the kernelbot checkout's commit (the example lives in it)
    toml = (out / "task.toml").read_text()
    assert "default for an input kept on the CPU (seq_lens_cpu)" in toml
    for name in ("self_cache_seqlens", "cu_seqlens_k", "page_table"):
        assert name in toml.split("mutated_args_static")[1].split("\n")[0]
        assert name in toml.split("mutated_args_observed")[1].split("\n")[0]

    # The reference writes the same buffers as the original backend.
    sys.path.insert(0, str(MINIREPO))
    try:
        from minisglang.attention.flash_backend import FlashDecodeBackend
    finally:
        sys.path.remove(str(MINIREPO))
    case = task.case("bs8")
    args, kwargs = task.make_inputs(case, 5, "cpu")
    backend = FlashDecodeBackend.__new__(FlashDecodeBackend)
    for attr in ("req_to_token", "page_size", "strided_indices"):
        setattr(backend, attr, kwargs[attr])
    backend.cache_seqlens = kwargs["self_cache_seqlens"].clone()
    backend.cu_seqlens_k = kwargs["cu_seqlens_k"].clone()
    backend.page_table = kwargs["page_table"].clone()
    backend.init_forward_metadata_replay(*args)
    max_seq_len_k = task.load_reference()(*args, **kwargs)
    assert max_seq_len_k == backend.max_seq_len_k
    assert torch.equal(kwargs["self_cache_seqlens"], backend.cache_seqlens)
    assert torch.equal(kwargs["cu_seqlens_k"], backend.cu_seqlens_k)
    assert torch.equal(kwargs["page_table"], backend.page_table)


def test_router_function_with_spec_and_draft(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = "minisglang.layers.moe.topk:biased_grouped_topk"
    code = run_cli(
        "extract",
        "--repo",
        MINIREPO,
        "--function",
        target,
        "--spec",
        SPECS / "minisglang_topk.toml",
        "--out",
        tmp_path / "spec",
    )
    assert code == 0, capsys.readouterr()
    reference = (tmp_path / "spec" / "reference.py").read_text()
    assert "NUM_EXPERT_GROUP = 8" in reference and "def group_limited_mask(" in reference
    assert "@torch.compile" not in reference

    code = run_cli("extract", "--repo", MINIREPO, "--function", target, "--out", tmp_path / "draft")
    printed = capsys.readouterr()
    assert code == 0, printed
    inputs = (tmp_path / "draft" / "inputs.py").read_text()
    assert inputs.startswith("# DRAFT: review these shapes")
    assert (tmp_path / "draft" / "draft_spec.toml").is_file()
    assert "DRAFT" in printed.err


def test_regime_follows_a_host_input_unless_named(tmp_path: Path) -> None:
    repo = write_repo(
        tmp_path / "hostread",
        {
            "hostread/__init__.py": "",
            "hostread/ops.py": (
                "import torch\n\n\n"
                "def head(x, lens, lens_cpu):\n"
                "    n = int(lens_cpu.max())  # a bound read on the host, as a decode step does\n"
                "    return x[:, :n] * lens[:, None]\n"
            ),
        },
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        "[sizes]\nrows = [2, 4]\ncols = 16\n"
        '[args.x]\nshape = ["rows", "cols"]\ndtype = "float32"\n'
        '[args.lens]\nshape = ["rows"]\ndtype = "int32"\ninit = "randint"\nlow = 1\nhigh = "cols"\n'
        '[args.lens_cpu]\nexpr = "lens.cpu()"\n'
    )
    common = ["extract", "--repo", repo, "--function", "hostread.ops:head", "--spec", spec, "--out"]
    assert run_cli(*common, tmp_path / "default") == 0
    assert run_cli(*common, tmp_path / "named", "--regime", "graph") == 0
    assert load_task(tmp_path / "default").regime == "wall"
    assert load_task(tmp_path / "named").regime == "graph"  # what the user asked for, even so
    # A scan that measured the region in CUDA graphs yields to the host input, and the task says both.
    scan = "scan: 93% of its GPU time in CUDA graph replays under the profiled benchmark"
    options = ExtractOptions(Path(repo), "hostread.ops:head", out=tmp_path / "scanned", spec=spec)
    summary = extract(dataclasses.replace(options, regime="graph", regime_from=scan))
    assert load_task(tmp_path / "scanned").regime == "wall"
    assert "(lens_cpu)" in summary.regime_from and summary.regime_from.endswith(f"(over the {scan})")


def test_existing_task_is_not_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "extract",
        "--repo",
        MINIREPO,
        "--function",
        "minisglang.layers.activation:SiluAndMul.forward_native",
        "--out",
        tmp_path / "t",
        "--no-probe",
    ]
    assert run_cli(*args) == 0
    before = (tmp_path / "t" / "reference.py").read_text()
    assert run_cli(*args) == 1
    assert "already holds a task; pass --force" in capsys.readouterr().err
    assert (tmp_path / "t" / "reference.py").read_text() == before
    assert run_cli(*args, "--force") == 0


def test_degenerate_task_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = write_repo(
        tmp_path / "deg",
        {
            "deg/__init__.py": "",
            "deg/ops.py": "import torch\n\n\ndef const(x):\n    return torch.zeros_like(x) + x.shape[0]\n",
        },
    )
    code = run_cli("extract", "--repo", repo, "--function", "deg.ops:const", "--out", tmp_path / "out")
    assert code == 1
    err = capsys.readouterr().err
    assert "refused deg.ops:const" in err and not (tmp_path / "out").exists()


def test_bad_spec_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text('[sizes]\ntokens = 4\n[args.gating_output]\nshape = ["tokens", 8]\ndtype = "float33"\n')
    code = run_cli(
        "extract",
        "--repo",
        MINIREPO,
        "--function",
        "minisglang.layers.moe.topk:biased_grouped_topk",
        "--spec",
        spec,
        "--out",
        tmp_path / "x",
    )
    assert code == 1
    assert "args.gating_output.dtype 'float33'" in capsys.readouterr().err
