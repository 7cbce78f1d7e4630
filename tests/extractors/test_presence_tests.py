"""`hasattr(self, "name")` in a method is decided at extraction time from what the class defines (its
`__init__`, its body, its methods), instead of refusing a method that uses `self` itself."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.extractors.conftest import write_repo
from tests.extractors.test_closure import built, load

OPS = """
import torch


class Rotary:
    def __init__(self, dim: int = 4):
        self.cos_sin_cache = torch.ones(16, dim)

    def forward_native(self, positions, x):
        if hasattr(self, "sin_cos_cache"):  # set only by another backend's setup
            cos_sin = self.sin_cos_cache
        else:
            cos_sin = self.cos_sin_cache.index_select(0, positions)
        if hasattr(self, "cos_sin_cache") and hasattr(self, "scale"):
            return x * cos_sin * self.scale()
        return x * cos_sin

    def scale(self):
        return 2.0

    def rebound(self):
        return hasattr(self, 1)  # not a name: still refused
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/ops.py": OPS})


def test_hasattr_of_self_is_decided_from_the_class(repo: Path) -> None:
    result = built(repo, "pkg.ops:Rotary.forward_native")
    assert "hasattr(" not in result.source
    assert "if False:" in result.source and "if True and True:" in result.source
    assert any("hasattr(self, 'sin_cos_cache') is False" in n for n in result.report.notes)
    fn = load(result.source, result.entry)
    cache, x, positions = torch.randn(16, 4), torch.randn(3, 4), torch.tensor([1, 5, 7])
    out = fn(positions, x, cos_sin_cache=cache, sin_cos_cache=None)
    torch.testing.assert_close(out, x * cache[positions] * 2.0)


def test_hasattr_with_a_non_literal_name_is_still_refused(repo: Path) -> None:
    with pytest.raises(Exception, match="uses `self` itself"):
        built(repo, "pkg.ops:Rotary.rebound")
