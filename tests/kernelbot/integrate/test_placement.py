from __future__ import annotations

from pathlib import Path

import pytest

from kernelbot.engines import load_profile
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.placement import place


def _tree(root: Path, package: str) -> Path:
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text("")
    return root


def test_sglang_git_layout_puts_the_kernel_beside_the_layer(tmp_path: Path) -> None:
    profile = load_profile("sglang").for_tree(_tree(tmp_path / "python", "sglang").parent)
    placement = place(profile, "python/sglang/srt/layers/layernorm.py", "rms_norm")
    assert placement.kernel_file == Path("python/sglang/srt/layers/rms_norm_triton.py")
    assert placement.kernel_module == "sglang.srt.layers.rms_norm_triton"
    assert placement.source_module == "sglang.srt.layers.layernorm"
    assert placement.test_file == Path("test/srt/test_rms_norm_triton.py") and placement.init_file is None


def test_lmdeploy_puts_the_kernel_with_its_kernels_and_exports_it(tmp_path: Path) -> None:
    profile = load_profile("lmdeploy").for_tree(_tree(tmp_path, "lmdeploy"))
    placement = place(profile, "lmdeploy/pytorch/backends/default/norm.py", "rms_norm")
    assert placement.kernel_file == Path("lmdeploy/pytorch/kernels/cuda/rms_norm_triton.py")
    assert placement.init_file == Path("lmdeploy/pytorch/kernels/cuda/__init__.py")
    assert placement.test_file == Path("tests/pytorch/kernel/test_rms_norm_triton.py")


def test_a_source_outside_the_source_root_is_refused(tmp_path: Path) -> None:
    profile = load_profile("sglang").for_tree(_tree(tmp_path / "python", "sglang").parent)
    with pytest.raises(IntegrationError, match="not under the source root python/"):
        place(profile, "sglang/srt/layers/layernorm.py", "rms_norm")
