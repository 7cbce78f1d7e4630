"""The engine's current path, read from the tree: SGLang's forward_cuda of an op, LMDeploy's Impl that CUDA's
build_op builds, the function itself otherwise; each named with the engine's version and, when it has no
column of its own, why (the CUDA-only kernel libraries missing here named)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernelbot.engines import load_profile
from kernelbot.engines.current_path import current_path
from tests.kernelbot.integrate.integrate_testing import release_root

ROOT = Path(__file__).resolve().parents[3]
MINIREPO = ROOT / "examples" / "minirepo"


def test_an_example_op_without_forward_cuda_runs_its_reference() -> None:
    profile = load_profile("example").for_tree(MINIREPO)
    today = current_path(MINIREPO, profile, "minisglang.layers.activation:SiluAndMul.forward_native")
    assert today is not None and today.is_reference
    assert today.name == "minisglang.layers.activation:SiluAndMul.forward_native"
    assert "has no forward_cuda" in today.reason and "eager column" in today.reason
    assert current_path(MINIREPO, profile, "minisglang.nowhere:f") is None  # no source: names none
    by_path = current_path(MINIREPO, profile, "minisglang/layers/activation.py:SiluAndMul.forward_native")
    assert by_path == today  # the path form names the same function


@pytest.mark.network
def test_sglang_ops_name_forward_cuda_and_what_it_needs() -> None:
    root = release_root("sglang==0.5.23")
    profile = load_profile("sglang").for_tree(root)
    gelu = current_path(root, profile, "sglang.srt.layers.activation:GeluAndMul.forward_native")
    assert gelu is not None and not gelu.is_reference
    assert gelu.name == "sglang.srt.layers.activation:GeluAndMul.forward_cuda"
    assert gelu.label() == f"the engine's current path `{gelu.name}` (sglang 0.5.23)"
    if importlib.util.find_spec("sgl_kernel") is None:
        assert "sgl_kernel" in gelu.reason and "cannot be imported on this machine" in gelu.reason
    assert "aiter" not in gelu.reason  # a ROCm-only import is not CUDA's path
    penalties = "sglang.srt.sampling.penaltylib.repetition_penalty:apply_scaling_penalties"
    not_an_op = current_path(root, profile, penalties)
    assert not_an_op is not None and not_an_op.is_reference and not_an_op.name == penalties


@pytest.mark.network
def test_lmdeploy_default_impls_name_the_impl_cuda_builds() -> None:
    root = release_root("lmdeploy==0.18.0")
    profile = load_profile("lmdeploy").for_tree(root)
    norm = current_path(root, profile, "lmdeploy.pytorch.backends.default.norm:DefaultRMSNormImpl.forward")
    assert norm is not None and not norm.is_reference
    assert norm.name == "lmdeploy.pytorch.backends.cuda.norm:TritonRMSNormImpl.forward"
    assert norm.version == "lmdeploy 0.18.0" and "build_op" in norm.reason


@pytest.mark.network
def test_the_confirmations_columns_name_the_current_path_and_why_it_has_no_figures() -> None:
    """What the body's microbenchmark section lists: eager, torch.compile, and the current path named with
    the release's version and the reason it was not timed."""
    from kernelbot.confirm.run import _columns

    root = release_root("sglang==0.5.23")
    profile = load_profile("sglang").for_tree(root)
    today = current_path(root, profile, "sglang.srt.layers.activation:GeluAndMul.forward_native")
    assert today is not None
    eager, compiled, current = _columns(None, today.label(), today.reason)
    assert (eager.name, compiled.name, current.name) == ("eager", "compile", "current")
    assert eager.available and compiled.available and not current.available
    assert current.label == today.label() and "(sglang 0.5.23)" in current.label
    assert current.reason == today.reason and "forward_cuda" in current.reason
