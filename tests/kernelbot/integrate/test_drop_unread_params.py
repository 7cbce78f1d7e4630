from __future__ import annotations

import ast
import inspect
import textwrap

import libcst as cst

from kernelbot.integrate.drop_unread_params import (
    DropUnreadParamsTransformer,
    called_as_the_reference,
    unread_parameters,
)


def _dropped(source: str, name: str = "rms_norm_triton") -> str:
    return cst.parse_module(textwrap.dedent(source)).visit(DropUnreadParamsTransformer(name)).code


def _signature(source: str, name: str = "rms_norm_triton") -> str:
    """`def name(...)` as ast writes it (the formatter lays the module out again after the transformer)."""
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.unparse(fn).splitlines()[0]


def test_the_entry_keeps_the_parameters_its_body_names() -> None:
    """SGLang's RMSNorm options the guard refuses (`quant_linear`, ...) are never read by the kernel: the
    entry drops them; a helper's signature is left alone, and a name a nested function uses keeps the
    parameter (any mention does)."""
    out = _dropped(
        """
        def _helper(x, unused):
            return x

        def rms_norm_triton(
            x,
            residual=None,
            quant_linear=None,
            *,
            fp32_residual=False,
            variance_epsilon=1e-06,
            weight,
        ):
            def inner(y):
                return y * fp32_residual
            return inner(x) + residual * weight * variance_epsilon
        """
    )
    assert _signature(out, "_helper") == "def _helper(x, unused):"
    assert (
        _signature(out)
        == "def rms_norm_triton(x, residual=None, *, fp32_residual=False, variance_epsilon=1e-06, weight):"
    )


def test_any_mention_keeps_a_parameter_and_a_bare_star_without_keywords_goes() -> None:
    out = _dropped(
        """
        def rms_norm_triton(x, out=None, *, flag=False):
            del out
            return x
        """
    )
    assert _signature(out) == "def rms_norm_triton(x, out=None):"


def test_star_args_and_positional_only_signatures_are_kept_whole() -> None:
    """The call site forwards those by position: leaving a parameter out there would shift the others."""
    for source in (
        "def rms_norm_triton(x, unused, *rest):\n    return x, rest\n",
        "def rms_norm_triton(x, unused, /):\n    return x\n",
    ):
        assert _dropped(source) == source


def test_unread_parameters_in_signature_order() -> None:
    fn = cst.parse_statement("def f(a, b, c=1, *, d, e=2):\n    return c + e\n")
    assert isinstance(fn, cst.FunctionDef)
    assert unread_parameters(fn) == ["a", "b", "d"]


def test_called_as_the_reference_passes_what_the_entry_takes() -> None:
    def reference(hidden_states, gating_output, topk, renormalize=True, *, scale=None):
        raise AssertionError("not called")

    def entry(gating_output, topk, *, scale=None):
        return gating_output, topk, scale

    call = called_as_the_reference(entry, inspect.signature(reference))
    assert call("h", "g", 8, False, scale=2.0) == ("g", 8, 2.0)
    assert call("h", "g", topk=4) == ("g", 4, None)
    # An entry that takes every parameter is returned as it is (no wrapper in a timed call).
    assert called_as_the_reference(reference, inspect.signature(reference)) is reference
    # ... unless asked for one (the other side of a timed pair that needs it): the same arguments.
    forwarded = called_as_the_reference(entry, inspect.signature(entry), always=True)
    assert forwarded is not entry and forwarded("g", 8, scale=2.0) == ("g", 8, 2.0)


def test_only_the_module_level_function_is_changed() -> None:
    source = "class Op:\n    def rms_norm_triton(self, x, unused):\n        return x\n"
    assert _dropped(source) == source
