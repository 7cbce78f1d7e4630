"""The closure: what gets copied into reference.py, renamed, kept as an import, or stubbed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from extractors.emit_reference import Provenance
from extractors.errors import TargetNotFound
from extractors.reference_builder import build_reference
from extractors.repo_index import RepoIndex
from extractors.target import TargetSpec, locate


def built(repo: Path, target: str):  # type: ignore[no-untyped-def]
    index = RepoIndex(repo)
    located = locate(index, TargetSpec.parse(target))
    return build_reference(index, located, Provenance(str(repo), "p.py", located.definition.qualname, "abc"))


def load(source: str, entry: str):  # type: ignore[no-untyped-def]
    namespace: dict = {"__name__": "kb_reference_test"}
    exec(compile(source, "reference.py", "exec"), namespace)
    return namespace[entry]


def test_relative_imports_constants_and_dropped_compile(toyrepo: Path, import_from) -> None:  # type: ignore[no-untyped-def]
    result = built(toyrepo, "toy.layers:silu_and_mul")
    src = result.source
    assert "import torch.nn.functional as F" in src and "import math" in src
    assert "SCALE = math.sqrt(2.0)" in src and "EPS = 1e-06" in src.replace("1e-6", "1e-06")
    assert "@torch.compile" not in src and "_UNUSED" not in src
    assert any("dropped @torch.compile" in d for d in result.report.decorators)
    # `silu_fn` (re-exported alias) and `consts.EPS` (module attribute) are called by their real names.
    assert "silu_fn" not in src and "consts.EPS" not in src
    x = torch.randn(4, 8)
    original = import_from(toyrepo, "toy.layers").silu_and_mul
    torch.testing.assert_close(load(src, "silu_and_mul")(x), original(x))


def test_name_clashes_star_imports_and_helper_classes(toyrepo: Path, import_from) -> None:  # type: ignore[no-untyped-def]
    result = built(toyrepo, "toy.layers:mixed")
    src = result.source
    assert "def _norm(" in src and "def _norm_other(" in src  # two modules' `_norm`, the later renamed
    assert "def doubled(" in src  # found through `from .star_source import *`
    assert "class Clamp" in src and "LIMIT = 3.0" in src
    x = torch.randn(3, 5)
    original = import_from(toyrepo, "toy.layers").mixed
    torch.testing.assert_close(load(src, "mixed")(x), original(x))


def test_third_party_and_unresolvable_names_become_reported_stubs(toyrepo: Path) -> None:
    missing = built(toyrepo, "toy.layers:uses_missing")
    assert any("sgl_kernel_missing" in s for s in missing.report.stubs)
    fn = load(missing.source, "uses_missing")
    assert torch.equal(fn(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(RuntimeError, match="not available in this reference"):
        fn(torch.ones(2), fast=True)

    undefined = built(toyrepo, "toy.layers:uses_undefined")
    assert any(s.startswith("not_defined_anywhere: ") for s in undefined.report.stubs)
    fn = load(undefined.source, "uses_undefined")
    assert torch.equal(fn(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(RuntimeError, match="not_defined_anywhere"):
        fn(torch.ones(2), fast=True)


def test_function_level_repo_import_is_closed_over(toyrepo: Path, import_from) -> None:  # type: ignore[no-untyped-def]
    src = built(toyrepo, "toy.layers:lazy_import").source
    assert "from toy" not in src and "def scaled_silu(" in src
    x = torch.randn(6)
    torch.testing.assert_close(load(src, "lazy_import")(x), import_from(toyrepo, "toy.layers").lazy_import(x))


def test_reference_starts_with_provenance_and_future_import(toyrepo: Path) -> None:
    src = built(toyrepo, "toy.layers:mixed").source
    lines = src.splitlines()
    assert lines[0].startswith("# Extracted by `kernelbot extract` from ")
    assert "p.py:mixed @ abc" in lines[1]
    assert "from __future__ import annotations" in src


def test_big_runtime_only_dependency_is_stubbed(tmp_path: Path) -> None:
    from tests.extractors.conftest import write_repo

    helpers = (
        "\n".join(f"def h{i}(x):\n    return h{i + 1}(x)\n" for i in range(60))
        + "def h60(x):\n    return x\n"
    )
    repo = write_repo(
        tmp_path / "big",
        {
            "big/__init__.py": "",
            "big/pool.py": f"class Pool:\n    def run(self, x):\n        return h0(x)\n\n\n{helpers}",
            "big/fn.py": "from big.pool import Pool\n\n\ndef f(x, pool=None):\n"
            "    if isinstance(pool, Pool):\n        return pool.run(x)\n    return x + 1\n",
        },
    )
    result = built(repo, "big.fn:f")
    assert any(
        s.startswith("Pool: closing over big.pool.Pool would copy more than") for s in result.report.stubs
    )
    assert "def h0" not in result.source
    assert torch.equal(load(result.source, "f")(torch.zeros(1)), torch.ones(1))


def test_unknown_target_lists_near_misses(toyrepo: Path) -> None:
    with pytest.raises(TargetNotFound, match=r"near misses: .*silu_and_mul"):
        built(toyrepo, "toy.layers:silu_and_mull")
