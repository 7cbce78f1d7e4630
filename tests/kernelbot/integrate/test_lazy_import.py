"""Where the kernel is imported. With the call-site convention, a profile with `kernel.lazy_import`
(LMDeploy's, for functions that are not a default Impl: its backends/default/ modules are imported by every
backend, with or without Triton) rewrites the function so that its module imports neither the kernel nor
Triton: the kernel is imported inside the function once a tensor is on the kernel's device. An op's
forward_triton backend (SGLang's convention, and the example's) always imports its kernel inside the
method, as SGLang's backends do. Shown on the bundled minirepo: with Triton made unimportable the rewritten
module imports and its original path runs, where the call site's top-of-module import (the default) fails
at import."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from extractors.extract import ExtractOptions, extract
from kernelbot.engines import load_profile
from kernelbot.integrate import integrate, op_slug
from tests.kernelbot.integrate.conftest import make_git_repo

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).parent
FUNCTION = "minisglang.layers.activation:SiluAndMul.forward_native"

# Triton cannot be imported (as on a backend that has none); then the rewritten layer is imported and its
# original path is run on a CPU tensor and compared with the PyTorch it replaced.
WITHOUT_TRITON = textwrap.dedent(
    """
    import importlib.abc
    import sys


    class NoTriton(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "triton" or name.startswith("triton."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None


    sys.meta_path.insert(0, NoTriton())
    import torch
    import torch.nn.functional as F

    from minisglang.layers import activation

    layer = activation.SiluAndMul.__new__(activation.SiluAndMul)
    x = torch.randn(4, 64)
    out = activation.SiluAndMul.forward_native(layer, x)
    torch.testing.assert_close(out, F.silu(x[..., :32]) * x[..., 32:], rtol=0, atol=0)
    assert "triton" not in sys.modules
    assert "minisglang.layers.silu_and_mul_triton" not in sys.modules
    assert "minisglang.kernels.ops.activation.silu_and_mul_triton" not in sys.modules
    torch.testing.assert_close(activation.SiluAndMul()(x), out, rtol=0, atol=0)  # the op's dispatch
    print("original path ran without triton")
    """
)


def _integrated(tmp_path: Path, *, lazy: bool, convention: str = "call-site") -> Path:
    repo = make_git_repo(ROOT / "examples" / "minirepo", tmp_path / "repo")
    task = tmp_path / "task"
    extract(ExtractOptions(repo, FUNCTION, out=task, spec=HERE / "specs" / "minisglang_silu_and_mul.toml"))
    profile = load_profile("example")
    kernel = dataclasses.replace(profile.kernel, lazy_import=lazy)
    profile = dataclasses.replace(profile, kernel=kernel, convention=convention)
    candidate = (HERE / "fixtures" / "silu_and_mul_forward_native.py").read_text()
    integrate(repo, profile, task, candidate, op_slug=op_slug(task))
    return repo


def _run_without_triton(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_TRITON],
        cwd=repo,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_a_lazy_import_leaves_the_original_path_working_without_triton(
    tmp_path: Path, tool_venvs: dict
) -> None:
    repo = _integrated(tmp_path, lazy=True)
    source = (repo / "minisglang/layers/activation.py").read_text()
    assert "silu_and_mul_triton" not in source.split("class SiluAndMul")[0]  # no import at the top
    assert '        if x.device.type == "cuda":\n' in source
    assert (
        "            from minisglang.layers.silu_and_mul_triton import can_use_silu_and_mul_triton, "
        "silu_and_mul_triton\n\n            if can_use_silu_and_mul_triton(x):\n" in source
    )
    done = _run_without_triton(repo)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "original path ran without triton" in done.stdout


@pytest.mark.slow
def test_the_top_of_module_import_needs_triton(tmp_path: Path, tool_venvs: dict) -> None:
    done = _run_without_triton(_integrated(tmp_path, lazy=False))
    assert done.returncode != 0 and "No module named 'triton'" in done.stderr


@pytest.mark.slow
def test_an_op_backend_imports_its_kernel_inside_the_method(tmp_path: Path, tool_venvs: dict) -> None:
    repo = _integrated(tmp_path, lazy=False, convention="example")
    source = (repo / "minisglang/layers/activation.py").read_text()
    assert "silu_and_mul_triton" not in source.split("class SiluAndMul")[0]
    done = _run_without_triton(repo)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "original path ran without triton" in done.stdout
