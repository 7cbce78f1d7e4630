"""Attributes `__init__` computes from its parameters' literal defaults through a helper of its own module, or
under an `if` those defaults decide (`self.stride = _tuplify(stride, 2)`), get that literal value: the method
is drafted with the constructor's value instead of a tensor standing in for a tuple."""

from __future__ import annotations

import inspect
from pathlib import Path

import libcst as cst
import torch

from extractors.gather_init_attrs import GatherInitAttrs
from tests.extractors.conftest import write_repo
from tests.extractors.test_closure import built, load

OPS = """
import torch
import torch.nn.functional as F
from torch import nn


def _tuplify(val, n: int) -> tuple:
    if isinstance(val, (list, tuple)):
        return tuple(val)
    return (val,) * n


def _needs_a_global(val):
    return torch.zeros(val)


class Conv(nn.Module):
    def __init__(self, channels: int, stride: int = 2, padding=1, mode: str = "zeros", groups: int = 1):
        super().__init__()
        self.stride = _tuplify(stride, 2)
        if isinstance(padding, str):
            self.padding = (0, 0) if padding == "valid" else padding
        else:
            self.padding = _tuplify(padding, 2)
        if mode != "zeros":
            self.pad = _tuplify(padding, 4)
        elif isinstance(self.padding, tuple):
            self.pad = self.padding + self.padding
        self.zeros = _needs_a_global(channels)
        self.enable = not True and _needs_a_global(channels)
        for k in range(2):
            stride = k
        self.after_loop = _tuplify(stride, 2)
        self.groups = groups
        self.weight = nn.Parameter(torch.empty(channels, channels, 3, 3))

    def forward_native(self, x, bias):
        if self.enable:
            return x
        return F.conv2d(x, self.weight, bias, self.stride, self.padding, (1, 1), self.groups)
"""


def _attrs(source: str) -> dict:
    module = cst.parse_module(source)
    owner = next(s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == "Conv")
    return GatherInitAttrs.of(module, owner)


def test_helper_and_decided_branches_give_literals() -> None:
    attrs = _attrs(OPS)
    assert attrs["stride"].default == (2, 2)  # the module's helper, with __init__'s default
    assert attrs["padding"].default == (1, 1)  # the `else` the default selects; the `if` is not recorded
    assert attrs["padding"].unconditional == [True]
    assert attrs["pad"].default == (1, 1, 1, 1)  # `elif` decided by an attribute computed before it
    assert attrs["enable"].default is False  # short-circuit: the helper needing a global is never called
    assert not hasattr(attrs["zeros"].default, "__len__") and attrs["zeros"].opaque  # needs torch: unknown
    assert attrs["after_loop"].opaque  # the loop rebinds `stride`: its default no longer holds


def test_a_conv_like_method_runs_with_the_constructor_values(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/ops.py": OPS})
    result = built(repo, "pkg.ops:Conv.forward_native")
    fn = load(result.source, result.entry)
    x, weight, bias = torch.randn(1, 4, 9, 9), torch.randn(4, 4, 3, 3), torch.randn(4)
    defaults = {k: v.default for k, v in inspect.signature(fn).parameters.items()}
    # the constructor's values are the defaults; only the weights have none (an input)
    assert defaults["stride"] == (2, 2) and defaults["padding"] == (1, 1) and defaults["enable"] is False
    assert defaults["weight"] is inspect.Parameter.empty
    out = fn(x, bias, weight=weight)
    torch.testing.assert_close(out, torch.nn.functional.conv2d(x, weight, bias, 2, 1))


def test_a_conv_layer_drafts_without_a_spec(tmp_path: Path) -> None:
    """The conv's rank, channels and small spatial and kernel axes come from `F.conv2d`, not from the name
    `x` (a [tokens, hidden] guess), so that the reference runs on the drafted inputs."""
    from extractors.extract import ExtractOptions, extract

    repo = write_repo(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/ops.py": OPS})
    summary = extract(ExtractOptions(repo, "pkg.ops:Conv.forward_native", out=tmp_path / "task"))
    assert summary.probe is not None and summary.probe.ran, summary.probe
    (output,) = summary.probe.outputs
    # a 14x10 input under a 3x5 kernel at stride 2 and padding 1 (the constructor's defaults): 7x5
    assert output.endswith(", 7, 5]"), output
