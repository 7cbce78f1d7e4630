"""drop_unread_host_params: a route's host loses the parameters its body never names, and its calls the
arguments they passed for them; what a call passes by position or through `*args`, and a host used other
than by a call, stay."""

from __future__ import annotations

import textwrap

import libcst as cst

from kernelbot.integrate.drop_unread_host_params import dropped_unread_host_params
from kernelbot.integrate.drop_unread_params import DropUnreadParamsTransformer

ROUTED = textwrap.dedent(
    """
    def _norm_large(x, residual=None, quant_linear=None, *, fp32_residual=False, eps, weight):
        return x + residual * weight * eps

    def _norm_small(x, residual=None, *, eps, weight):
        return x * weight * eps

    def norm(x, residual=None, quant_linear=None, *, fp32_residual=False, eps, weight):
        if x < 4:
            return _norm_small(x, residual=residual, eps=eps, weight=weight)
        return _norm_large(
            x, residual=residual, quant_linear=quant_linear, fp32_residual=fp32_residual, eps=eps,
            weight=weight,
        )
    """
)


def dropped(source: str) -> str:
    module = dropped_unread_host_params(cst.parse_module(source), "norm")
    return module.visit(DropUnreadParamsTransformer("norm")).code


def test_a_hosts_unread_options_go_from_it_its_calls_and_then_the_entry() -> None:
    code = dropped(ROUTED)
    assert "def _norm_large(x, residual=None, *, eps, weight):" in code
    assert "def _norm_small(x, *, eps, weight):" in code  # residual: passed by keyword only, never read
    assert "_norm_small(x, eps=eps, weight=weight)" in code
    assert "quant_linear" not in code and "fp32_residual" not in code  # the entry's went after them
    assert "def norm(x, residual=None, *, eps, weight):" in code
    namespace: dict[str, object] = {}
    exec(code, namespace)  # the calls still bind: every argument a host takes is passed
    norm = namespace["norm"]
    assert callable(norm) and norm(10.0, residual=1.0, eps=2.0, weight=3.0) == 16.0
    assert norm(1.0, residual=5.0, eps=2.0, weight=3.0) == 6.0


def test_what_a_call_passes_by_position_or_through_star_args_stays() -> None:
    source = textwrap.dedent(
        """
        def _host(x, unused, *, flag=None):
            return x

        def _spread(x, unused=None):
            return x

        def norm(x, *args):
            _spread(*args)
            return _host(x, 1, flag=True)
        """
    )
    code = dropped_unread_host_params(cst.parse_module(source), "norm").code
    assert "def _host(x, unused):" in code and "_host(x, 1)" in code  # `unused` is passed by position
    assert "def _spread(x, unused=None):" in code  # a call passes *args


def test_a_host_used_as_a_value_keeps_its_signature() -> None:
    source = textwrap.dedent(
        """
        def _host(x, unused=None):
            return x

        def norm(x):
            table = {"small": _host}
            return _host(x, unused=1)
        """
    )
    assert dropped_unread_host_params(cst.parse_module(source), "norm").code == source
