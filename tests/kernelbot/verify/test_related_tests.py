"""Finding the test files that import a touched module, statically."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelbot.verify.related import imported_modules, module_name, related_test_files

MINIREPO = Path(__file__).resolve().parents[3] / "examples" / "minirepo"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("path", "root", "expected"),
    [
        ("python/sglang/srt/layers/activation.py", "python", "sglang.srt.layers.activation"),
        ("lmdeploy/pytorch/kernels/cuda/__init__.py", "", "lmdeploy.pytorch.kernels.cuda"),
        ("minisglang/layers/layernorm.py", "", "minisglang.layers.layernorm"),
        ("docs/conf.py", "python", None),
        ("README.md", "", None),
        ("my-scripts/run.py", "", None),
    ],
)
def test_module_names(path: str, root: str, expected: str | None) -> None:
    assert module_name(Path(path), root) == expected


def test_imports_absolute_from_and_relative() -> None:
    source = (
        "import os, a.b.c\n"
        "from x.y import z, w as v\n"
        "from . import sibling\n"
        "from ..pkg import thing\n"
        "def f():\n    import late.module\n"
    )
    found = imported_modules(source, package="top.sub")
    assert {"os", "a.b.c", "x.y", "x.y.z", "x.y.w", "late.module"} <= found
    assert {"top.sub", "top.sub.sibling", "top.pkg", "top.pkg.thing"} <= found
    assert imported_modules("from .... import too_far\n", package="one") == set()


def test_direct_importers_only(tmp_path: Path) -> None:
    repo = write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/ops.py": "def f(): ...\n",
            "pkg/model.py": "from pkg.ops import f\n",
            "tests/test_ops_direct.py": "from pkg.ops import f\n",
            "tests/test_ops_from_package.py": "from pkg import ops\n",
            "tests/test_ops_module.py": "import pkg.ops as o\n",
            "tests/test_model.py": "from pkg.model import f\n",  # reaches ops only through model
            "tests/test_syntax_error.py": "from pkg.ops import (\n",
            "tests/helper.py": "from pkg.ops import f\n",  # not a test file
            "pkg/ops_test.py": "from .ops import f\n",
            ".venv/lib/test_x.py": "import pkg.ops\n",
            "build/test_y.py": "import pkg.ops\n",
        },
    )
    found = related_test_files(repo, [Path("pkg/ops.py")])
    assert found == [
        Path("pkg/ops_test.py"),
        Path("tests/test_ops_direct.py"),
        Path("tests/test_ops_from_package.py"),
        Path("tests/test_ops_module.py"),
    ]
    assert related_test_files(repo, [Path("README.md")]) == []


def test_source_root_layout(tmp_path: Path) -> None:
    repo = write(
        tmp_path,
        {
            "python/sglang/srt/layers/activation.py": "",
            "test/srt/test_activation.py": "from sglang.srt.layers.activation import SiluAndMul\n",
            "test/srt/test_other.py": "import torch\n",
        },
    )
    touched = [Path("python/sglang/srt/layers/activation.py")]
    assert related_test_files(repo, touched, "python") == [Path("test/srt/test_activation.py")]


@pytest.mark.skipif(not MINIREPO.is_dir(), reason="examples/minirepo is not in this checkout")
def test_the_example_repository() -> None:
    assert related_test_files(MINIREPO, [Path("minisglang/layers/activation.py")]) == [
        Path("tests/test_layers.py")
    ]
    assert related_test_files(MINIREPO, [Path("minisglang/layers/moe/topk.py")]) == [
        Path("tests/test_topk.py")
    ]
