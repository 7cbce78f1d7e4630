"""Attributes `__init__` builds with PyTorch (`self.silu = nn.SiLU(inplace)`) are rebuilt in the reference the
way `__init__` builds them, instead of becoming parameters that a draft cannot fill."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from extractors.errors import SpecError
from extractors.extract import ExtractOptions, extract
from tests.extractors.conftest import write_repo
from tests.extractors.test_closure import built, load

OPS = """
import torch
from torch import nn
import torch.nn as tnn


class SiluAndMul:
    def __init__(self, inplace: bool):
        self.inplace = inplace
        self.silu = nn.SiLU(inplace)

    def forward(self, x):
        gate, up = x.chunk(2, -1)
        return self.silu(gate) * up


class GeluAndMul:
    def __init__(self, approximate: str = "tanh"):
        self.act = tnn.GELU(approximate=approximate)

    def forward(self, x):
        gate, up = x.chunk(2, -1)
        return self.act(gate) * up


class Scaled:
    def __init__(self, hidden: int):
        self.proj = nn.Linear(hidden, hidden)  # weights: stays an input
        self.scale = torch.nn.Hardtanh(-2.0, 2.0) if hidden > 4 else None  # conditional: not rebuilt

    def forward(self, x):
        return self.proj(x)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/ops.py": OPS})


def test_a_module_built_in_init_is_rebuilt_with_its_arguments(repo: Path) -> None:
    result = built(repo, "pkg.ops:SiluAndMul.forward")
    assert result.attribute_params == {}
    assert "_silu = nn.SiLU(False)" in result.source  # no default: the out-of-place path
    fn = load(result.source, result.entry)
    x = torch.randn(3, 8)
    torch.testing.assert_close(fn(x), torch.nn.functional.silu(x[:, :4]) * x[:, 4:])
    assert any("inplace=False" in note for note in result.report.notes)

    gelu = built(repo, "pkg.ops:GeluAndMul.forward")
    assert '_act = tnn.GELU(approximate="tanh")' in gelu.source  # __init__'s default, its import kept
    expected = torch.nn.functional.gelu(x[:, :4], approximate="tanh") * x[:, 4:]
    torch.testing.assert_close(load(gelu.source, gelu.entry)(x), expected)


def test_weights_stay_parameters(repo: Path) -> None:
    result = built(repo, "pkg.ops:Scaled.forward")
    assert result.attribute_params == {"proj": "proj"}


def test_extracts_without_a_spec(repo: Path, tmp_path: Path) -> None:
    summary = extract(ExtractOptions(repo, "pkg.ops:SiluAndMul.forward", out=tmp_path / "task"))
    assert summary.probe is not None and summary.probe.ran


def test_a_spec_missing_a_value_says_how_to_give_one(repo: Path, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('[sizes]\ntokens = [4]\n[args.x]\nshape = ["tokens", 8]\n')
    with pytest.raises(SpecError, match=r"expr = \"torch.nn.SiLU\(\)\"") as refused:
        extract(ExtractOptions(repo, "pkg.ops:Scaled.forward", out=tmp_path / "t2", spec=spec))
    # the missing module is named with the expression `__init__` builds it with, ready to paste
    shown = '[args.proj] expr = "torch.nn.Linear(hidden, hidden)"'
    assert shown in str(refused.value)
    table = shown.replace("] ", "]\n") + "\n"
    spec.write_text('[sizes]\ntokens = [4]\nhidden = 8\n[args.x]\nshape = ["tokens", "hidden"]\n' + table)
    summary = extract(ExtractOptions(repo, "pkg.ops:Scaled.forward", out=tmp_path / "t3", spec=spec))
    assert summary.probe is not None and summary.probe.ran
