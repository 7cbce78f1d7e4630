"""The generated test's make_inputs draws the same values as the task's own spec-generated inputs.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from extractors.input_spec import load_spec, render_inputs
from extractors.signature import Param
from kernelbot.integrate.inputs_source import render_make_inputs
from kernelbot.integrate.task_view import _input_spec

SPECS = Path(__file__).resolve().parents[2] / "extractors" / "specs" / "real"


@pytest.mark.parametrize(
    "spec",
    [
        "sglang_rmsnorm",  # randn with mean/std, values from sizes, none
        "sglang_decode_metadata",  # zeros, perm, randint with expressions, expr
        "sglang_top_p_normalize",  # probs, rand with low/high
        "lmdeploy_moe_gate",  # text, bool/number values
        "lmdeploy_filter_topk",  # expr using the generator
    ],
)
def test_rendered_inputs_equal_the_task_inputs(spec: str, tmp_path: Path) -> None:
    loaded = load_spec(SPECS / f"{spec}.toml")
    signature = [Param(name, "positional", "", None) for name in loaded.args]
    inputs_py = tmp_path / "inputs.py"
    inputs_py.write_text(render_inputs(loaded, signature, spec))
    task_scope: dict = {}
    exec(compile(inputs_py.read_text(), str(inputs_py), "exec"), task_scope)
    parsed = _input_spec(inputs_py)
    assert parsed is not None
    cases = [params for _, params in loaded.expand_cases()]
    source = render_make_inputs(parsed, list(cases[0]))
    test_scope: dict = {"torch": torch, "math": __import__("math")}
    exec(source, test_scope)
    for params in cases:
        want = task_scope["make_inputs"](dict(params), 7, "cpu")
        got = test_scope["make_inputs"](**params, seed=7)
        assert_same(got, want)


def assert_same(got: object, want: object) -> None:
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor) and got.dtype == want.dtype and torch.equal(got, want)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)  # type: ignore[arg-type]
        for g, w in zip(got, want, strict=True):  # type: ignore[call-overload]
            assert_same(g, w)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want)
        for key in want:
            assert_same(got[key], want[key])
    else:
        assert got == want and type(got) is type(want)


def test_reserved_names_are_refused() -> None:
    from kernelbot.integrate.errors import IntegrationError
    from kernelbot.integrate.task_view import InputSpecSource

    with pytest.raises(IntegrationError, match="gen"):
        render_make_inputs(InputSpecSource({"gen": {"value": 1}}, [("gen", "positional")]), ["tokens"])


def test_a_when_argument_is_none_where_its_key_is_false_and_half_tensors_take_the_test_dtype() -> None:
    """`with_residual` reaches make_inputs: False gives None (drawing nothing, as inputs.py does), True the
    tensor; tensors of the swapped dtype take float_dtype, the fp32 weight keeps its dtype."""
    from kernelbot.integrate.task_view import InputSpecSource

    spec = InputSpecSource(
        {
            "x": {"shape": ["tokens", "hidden"], "dtype": "bfloat16"},
            "residual": {"shape": ["tokens", "hidden"], "dtype": "bfloat16", "when": "with_residual"},
            "weight": {"shape": ["hidden"], "dtype": "float32"},
        },
        [("x", "positional"), ("residual", "positional"), ("weight", "keyword")],
    )
    source = render_make_inputs(spec, ["tokens", "hidden", "with_residual"], swap="bfloat16")
    scope: dict = {"torch": torch}
    exec(source, scope)
    (x, residual), kwargs = scope["make_inputs"](
        tokens=3, hidden=8, with_residual=False, float_dtype=torch.float16, seed=0
    )
    assert residual is None and x.dtype == torch.float16 and kwargs["weight"].dtype == torch.float32
    (x2, residual), kwargs2 = scope["make_inputs"](
        tokens=3, hidden=8, with_residual=True, float_dtype=torch.bfloat16, seed=0
    )
    assert residual is not None and residual.dtype == torch.bfloat16 and residual.shape == (3, 8)
    torch.testing.assert_close(x2.float(), x.float(), atol=1e-2, rtol=1e-2)  # one draw, two dtypes
    assert not torch.equal(kwargs2["weight"], kwargs["weight"])  # the residual drew first this time
