"""The arguments every launch of one size test passes first, gathered once
(kernelbot/integrate/shared_launch_args.py): each kernel still receives what it did."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import libcst as cst
import pytest

from kernelbot.integrate.shared_launch_args import shared_launch_args

MODULE = """
import triton


@triton.jit
def _norm_small(x_ptr, residual_ptr, out_ptr, eps, N: tl.constexpr, N_P2: tl.constexpr):
    pass


@triton.jit
def _norm_large(x_ptr, residual_ptr, out_ptr, eps, BLOCK: tl.constexpr, N: tl.constexpr):
    pass


def norm(x, residual, out, eps, nbytes):
    n = x
    if nbytes <= 1000:
        _norm_small[(n,)](
            x_ptr=x, residual_ptr=residual, out_ptr=out, eps=eps, N=n, N_P2=n * 2, num_warps=4
        )
    else:
        _norm_large[(n,)](
            x_ptr=x, residual_ptr=residual, out_ptr=out, eps=eps, BLOCK=8, N=n, num_warps=8
        )
    return out
"""


def _launched(source: str) -> list[tuple[str, dict[str, object]]]:
    """What each launch binds to its kernel's parameters, for a small and a large call."""
    calls: list[tuple[str, dict[str, object]]] = []

    class Kernel:  # `@triton.jit` and `kernel[grid](...)`, recording the arguments bound
        def __init__(self, fn):
            self.fn = fn

        def __getitem__(self, grid):
            def launch(*args, num_warps=None, **kwargs):
                bound = inspect.signature(self.fn).bind(*args, **kwargs)
                calls.append((self.fn.__name__, dict(bound.arguments)))

            return launch

    namespace: dict[str, object] = {
        "tl": SimpleNamespace(constexpr=int),
        "Triton": SimpleNamespace(jit=Kernel),
    }
    code = source.replace("import triton\n", "triton = Triton\n")
    exec(compile(code, "<module>", "exec"), namespace)  # the test's own source, not candidate code
    norm = namespace["norm"]
    assert callable(norm)
    norm(3, "r", "o", 1e-6, 10)
    norm(5, "r", "o", 1e-6, 5000)
    return calls


def test_two_kernels_launched_alike_take_one_tuple() -> None:
    out = shared_launch_args(cst.parse_module(MODULE)).code
    assert "    args = (x, residual, out, eps)\n    if nbytes <= 1000:\n" in out
    assert "_norm_small[(n,)](*args, N=n, N_P2=n * 2, num_warps=4" in " ".join(out.split()).replace("( ", "(")
    assert out.count("*args") == 2 and "x_ptr=" not in out
    assert _launched(out) == _launched(MODULE)


@pytest.mark.parametrize(
    ("change", "gathered"),
    [
        # Rebound before the statement: the tuple is built after it, with the new value.
        (("    n = x\n    if", "    n = x\n    if eps:\n        eps = 2\n    if"), "(x, residual, out, eps)"),
        # Rebound inside it: the names before it are shared, two, fewer than three.
        (("    if nbytes <= 1000:\n", "    if nbytes <= 1000:\n        out = x\n"), None),
        (
            (
                "residual_ptr=residual, out_ptr=out, eps=eps, BLOCK",
                "residual_ptr=x, out_ptr=out, eps=eps, BLOCK",
            ),
            None,
        ),
        (
            (
                "def _norm_large(x_ptr, residual_ptr, out_ptr,",
                "def _norm_large(residual_ptr, x_ptr, out_ptr,",
            ),
            None,
        ),
    ],
    ids=["rebound-before", "rebound-inside", "another-value", "another-parameter-order"],
)
def test_launches_that_would_receive_something_else_keep_their_keywords(
    change: tuple[str, str], gathered: str | None
) -> None:
    source = MODULE.replace(*change)
    assert source != MODULE
    out = shared_launch_args(cst.parse_module(source)).code
    if gathered is None:
        assert "*args" not in out and "args = " not in out
    else:
        assert f"        eps = 2\n    args = {gathered}\n" in out
    assert _launched(out) == _launched(source)


def test_a_name_taken_in_the_function_is_not_used_for_the_tuple() -> None:
    source = MODULE.replace("    n = x\n", "    n = x\n    args = None\n")
    out = shared_launch_args(cst.parse_module(source)).code
    assert "launch_args = (x, residual, out, eps)" in out and out.count("*launch_args") == 2
    assert _launched(out) == _launched(source)
