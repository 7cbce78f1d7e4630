"""What a function returns, by name: a plain name at a position of a return statement, None for anything
else; the returns of what the function defines are not its own."""

from __future__ import annotations

import textwrap

import libcst as cst

from kernelbot.integrate.gather_returned_names import GatherReturnedNamesVisitor
from tests.kernelbot.integrate.integrate_testing import release_file


def test_each_return_is_the_names_it_returns() -> None:
    source = textwrap.dedent(
        """
        def norm(x, residual=None):
            def helper(h):
                return h * 2, None

            class Out:
                def get(self):
                    return self

            if residual is None:
                return x
            if x.dim() == 3:
                return x, helper(residual)[0]
            return (x, residual)
        """
    )
    assert GatherReturnedNamesVisitor.of(source, "norm") == [("x",), ("x", None), ("x", "residual")]


def test_a_bare_return_and_a_starred_value() -> None:
    source = "def f(x, *rest):\n    if x:\n        return\n    return x, *rest\n"
    assert GatherReturnedNamesVisitor.of(source, "f") == [(), ("x", None)]


def test_another_function_or_none_is_left_out() -> None:
    assert GatherReturnedNamesVisitor.of("def g(x):\n    return x\n", "f") == []


def test_a_function_node_is_visited_alone() -> None:
    host = cst.parse_module("def host(x):\n    buf0 = x\n    return (buf0, x)\n").body[0]
    visitor = GatherReturnedNamesVisitor("host")
    host.visit(visitor)
    assert visitor.returns == [("buf0", "x")]


def test_real_sglang_rmsnorm_forward_native() -> None:
    """SGLang's RMSNorm returns the normalised `x` alone, or with the `residual` it rebound."""
    source = release_file("sglang==0.5.23", "sglang/srt/layers/layernorm.py")
    assert GatherReturnedNamesVisitor.of(source, "forward_native") == [("x",), ("x", "residual")]
