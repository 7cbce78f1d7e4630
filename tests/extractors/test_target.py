"""Locating targets: the three spellings, misses with near misses, ambiguity."""

from __future__ import annotations

from pathlib import Path

import pytest

from extractors.errors import AmbiguousTarget, TargetNotFound, UnsupportedCode
from extractors.repo_index import RepoIndex
from extractors.target import TargetSpec, locate
from tests.extractors.conftest import write_repo


def test_spellings(toyrepo: Path) -> None:
    index = RepoIndex(toyrepo)
    by_module = locate(index, TargetSpec.parse("toy.layers:Backend.Decode.update"))
    by_path = locate(index, TargetSpec.parse("toy/layers.py:Backend.Decode.update"))
    bare = locate(index, TargetSpec.parse("Backend.Decode.update"))
    assert by_module.definition.qualname == by_path.definition.qualname == bare.definition.qualname
    assert by_module.is_method and by_module.owner.name.value == "Decode"  # type: ignore[union-attr]
    assert by_module.ref.name == "toy.layers"


def test_misses_and_refusals(toyrepo: Path) -> None:
    index = RepoIndex(toyrepo)
    with pytest.raises(TargetNotFound, match=r"near misses: RMSNorm\.forward_native"):
        locate(index, TargetSpec.parse("toy.layers:RMSNorm.forward"))
    with pytest.raises(TargetNotFound, match=r"no module 'toy\.layer' .*did you mean toy\.layers"):
        locate(index, TargetSpec.parse("toy.layer:mixed"))
    with pytest.raises(UnsupportedCode, match="is a class"):
        locate(index, TargetSpec.parse("toy.layers:RMSNorm"))
    with pytest.raises(TargetNotFound, match=r"expected package\.module:Qualname"):
        TargetSpec.parse("toy.layers:not a name")


def test_ambiguous_names_list_the_places(tmp_path: Path) -> None:
    repo = write_repo(
        tmp_path / "amb",
        {
            "amb/__init__.py": "",
            "amb/a.py": "import os\nif os.name == 'nt':\n    def f(x):\n        return x\n"
            "else:\n    def f(x):\n        return -x\n",
            "amb/b.py": "def f(x):\n    return x\n",
        },
    )
    index = RepoIndex(repo)
    with pytest.raises(AmbiguousTarget, match=r"defines 'f' 2 times \(line 3, line 6\)"):
        locate(index, TargetSpec.parse("amb.a:f"))
    with pytest.raises(AmbiguousTarget, match="'f' is defined 3 times"):
        locate(index, TargetSpec.parse("f"))
