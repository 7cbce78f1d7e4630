"""Methods become functions: self reads -> parameters, writes -> outputs, helper methods closed over."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from extractors.errors import UnsupportedCode
from extractors.gather_inplace_writes import inplace_writes
from extractors.method_to_function import entry_name_for
from tests.extractors.test_closure import built, load


def test_self_reads_become_parameters_with_init_defaults(toyrepo: Path, import_from) -> None:  # type: ignore[no-untyped-def]
    result = built(toyrepo, "toy.layers:RMSNorm.forward_native")
    assert result.entry == "rms_norm_forward_native"
    assert result.attribute_params == {"variance_epsilon": "variance_epsilon", "weight": "weight"}
    src = result.source
    assert "def _rms_norm__variance(x, *, variance_epsilon)" in src
    assert "def _rms_norm_scale(*, weight)" in src  # the property became a function
    assert "variance_epsilon=1e-06" in src  # default taken from __init__(eps=1e-6)
    assert "@torch.no_grad()" in src and "@property" not in src
    assert "self" not in src.split("def rms_norm_forward_native")[1]

    module = import_from(toyrepo, "toy.layers")
    layer = module.RMSNorm(16)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(16))
    x, residual = torch.randn(3, 16), torch.randn(3, 16)
    fn = load(src, result.entry)
    torch.testing.assert_close(fn(x, weight=layer.weight.detach()), layer.forward_native(x))
    got = fn(x, residual, weight=layer.weight.detach())
    want = layer.forward_native(x, residual)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])


def test_nested_class_method_writes_become_outputs(toyrepo: Path, import_from) -> None:  # type: ignore[no-untyped-def]
    result = built(toyrepo, "toy.layers:Backend.Decode.update")
    assert result.entry == "decode_update"
    assert result.outputs == ["self.steps", "self.last_bs"]
    src = result.source
    assert "steps, = " not in src and "steps = _decode__bump(bs, steps=steps)" in src
    # `seq_lens` is also a parameter of update(): the attribute's parameter is renamed.
    assert result.attribute_params["seq_lens"] == "self_seq_lens"
    assert set(inplace_writes(src, result.entry)) == {"self_seq_lens"}

    decode = import_from(toyrepo, "toy.layers").Backend.Decode(4)
    seq = torch.tensor([5, 6, 7, 8], dtype=torch.int32)
    buffer = torch.zeros(4, dtype=torch.int32)
    steps, last_bs = load(src, result.entry)(2, seq, self_seq_lens=buffer, steps=10)
    decode.steps = 10
    decode.update(2, seq)
    assert (steps, last_bs) == (decode.steps, decode.last_bs) == (12, 2)
    assert torch.equal(buffer, decode.seq_lens)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("toy.layers:Refused.leak", "uses `self` itself"),
        ("toy.layers:Refused.parent", "calls super()"),
    ],
)
def test_refusals_say_why(toyrepo: Path, target: str, message: str) -> None:
    with pytest.raises(UnsupportedCode, match=message):
        built(toyrepo, target)


def test_entry_names() -> None:
    assert entry_name_for("grouped_topk") == "grouped_topk"
    assert entry_name_for("RMSNorm.forward_native") == "rms_norm_forward_native"
    assert entry_name_for("Backend.Decode._update") == "decode_update"
