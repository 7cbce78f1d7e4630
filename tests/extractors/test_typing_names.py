"""Type hints of an extracted reference name `typing` names (Optional, Union, Tuple) that the closure does
not import on its own (hints are left out of it): the reference imports them, and only them."""

from __future__ import annotations

import typing
from pathlib import Path

import libcst as cst

from evaluators.task import load_task
from extractors.extract import ExtractOptions, extract
from extractors.gather_typing_names import GatherTypingNames
from tests.extractors.conftest import write_repo

# As in SGLang's layernorm.py: typing names and an engine class in hints, a method with self attributes.
NORM_MODULE = """
from typing import Optional, Tuple, Union

import torch
from torch import nn

from engine.batch import ForwardBatch


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.variance_epsilon = eps

    def forward_native(
        self, x: torch.Tensor, residual: Optional[torch.Tensor] = None, batch: Optional[ForwardBatch] = None
    ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        if residual is not None:
            x = x + residual
            residual = x
        variance = x.float().pow(2).mean(dim=-1, keepdim=True)
        out = (x.float() * torch.rsqrt(variance + self.variance_epsilon)).to(x.dtype) * self.weight
        return out if residual is None else (out, residual)
"""
SPEC = """
[sizes]
tokens = [3]
hidden = 16

[args.x]
shape = ["tokens", "hidden"]

[args.residual]
shape = ["tokens", "hidden"]

[args.weight]
shape = ["hidden"]
"""


def missing(source: str) -> list[str]:
    return GatherTypingNames.missing(cst.parse_module(source))


def test_only_unbound_typing_names_read_in_hints_are_missing() -> None:
    source = (
        "import typing\nfrom typing import List\nimport torch\n\n"
        "def f(x: Optional[torch.Tensor], y: List[int], z: typing.Tuple[int], w: ForwardBatch)"
        " -> Union[int, Any]:\n"
        "    Dict = 1\n    return Sequence\n"
    )
    # Sequence is read at run time, not in a hint (the closure's business); Tuple comes through `typing.`.
    assert missing(source) == ["Any", "Optional", "Union"]
    assert missing("def f(x):\n    return x\n") == []


def test_the_extracted_reference_imports_the_typing_names_its_hints_use(tmp_path: Path) -> None:
    repo = write_repo(
        tmp_path / "repo",
        {
            "engine/__init__.py": "",
            "engine/batch.py": "class ForwardBatch:\n    pass\n",
            "engine/norm.py": NORM_MODULE,
        },
    )
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "task"
    extract(ExtractOptions(repo, "engine.norm:RMSNorm.forward_native", out=out, spec=tmp_path / "spec.toml"))
    text = (out / "reference.py").read_text()
    assert "from typing import Optional, Tuple, Union\n" in text
    assert "ForwardBatch" not in text.split("def ")[0]  # the engine class stays a hint only, never imported
    reference = load_task(out).load_reference()
    hints = typing.get_type_hints(reference, localns={"ForwardBatch": object})  # the typing names resolve
    assert set(hints) >= {"x", "residual", "return"}
