"""A layer norm's affine weight and bias are drafted as tensors of the normalized shape (LMDeploy 0.18.0's
DefaultLayerNormImpl.forward passes them through to F.layer_norm, with None defaults and no None test): left
at None, the task would pass a kernel that ignores them. No reference is run."""

from __future__ import annotations

from extractors.drafting.gather_param_uses import gather_param_uses
from extractors.drafting.serving_shapes import load_profile
from extractors.drafting.solver import initial_assignment
from extractors.signature import entry_signature

LAYER_NORM = """
import torch


def layer_norm(x: torch.Tensor, weight: torch.Tensor = None, bias: torch.Tensor = None,
               residual: torch.Tensor = None, *, normalized_shape, eps=1e-06):
    if residual is not None:
        x = x + residual
        residual = x
    x = torch.nn.functional.layer_norm(x, normalized_shape, weight=weight, bias=bias, eps=eps)
    if residual is None:
        return x
    return x, residual
"""


def test_the_affine_weight_and_bias_take_the_normalized_shape_and_the_input_dtype() -> None:
    facts = gather_param_uses(LAYER_NORM, "layer_norm")
    start = initial_assignment(entry_signature(LAYER_NORM, "layer_norm"), facts, {}, load_profile("lmdeploy"))
    args = start.args
    assert args["x"].dims == ["tokens", "hidden"]
    for name in ("weight", "bias"):
        assert args[name].kind == "tensor" and args[name].dims == ["hidden"], args[name].describe(start.sizes)
        assert args[name].dtype == args["x"].dtype
    assert args["normalized_shape"].value == "(hidden,)"
    assert args["residual"].kind == "none" and args["residual"].optional  # tested against None: a switch
