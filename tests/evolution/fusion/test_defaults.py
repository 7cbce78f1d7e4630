"""Defaults of a reference's signature in a candidate of its own: module constants are defined under the
reference's names, enum classes are rebuilt, other values are inlined, and the fusion seed of a reference
whose defaults read module constants (`topk: int = TOP_K`, a keyword-only `eps=EPS`) runs correctly."""

from __future__ import annotations

import ast
import enum
from pathlib import Path

import pytest
from fusion_tasks import check, trace, write, write_task

from evolution.writers.tracing.errors import TraceError
from evolution.writers.tracing.signature import literal_text, resolve_defaults


class Mode(enum.IntEnum):
    FAST = 1
    EXACT = 2


TOP_K = 8
SCALES = (0.5, 2.0)
_OBJECT = object()


def _reference(x, topk=TOP_K, scales=SCALES, *, mode=Mode.FAST, eps=1e-6, dtype=None, cap=float("inf")):
    return x


_SOURCE = (
    "def _reference(x, topk=TOP_K, scales=SCALES, *, mode=Mode.FAST, eps=1e-6, dtype=None, "
    "cap=float('inf')):\n    return x\n"
)


def _args() -> ast.arguments:
    fn = ast.parse(_SOURCE).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return fn.args


def test_constants_keep_the_references_names_and_enums_are_rebuilt() -> None:
    args = _args()
    statements = resolve_defaults(args, _reference)
    assert ast.unparse(args) == (
        "x, topk=TOP_K, scales=SCALES, *, mode=Mode.FAST, eps=1e-06, dtype=None, cap=float('inf')"
    )
    namespace: dict = {}
    exec("\n".join(statements), namespace)  # what the candidate defines before its entry
    assert namespace["TOP_K"] == 8 and namespace["SCALES"] == (0.5, 2.0)
    assert namespace["Mode"].FAST == 1 and issubclass(namespace["Mode"], enum.IntEnum)


def test_inline_mode_writes_values() -> None:
    def reference(x, topk=TOP_K, scales=SCALES):
        return x

    fn = ast.parse("def reference(x, topk=TOP_K, scales=SCALES):\n    return x\n").body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert resolve_defaults(fn.args, reference, inline=True) == ()
    assert ast.unparse(fn.args) == "x, topk=8, scales=(0.5, 2.0)"


def test_a_default_no_module_can_build_is_refused_in_one_sentence() -> None:
    def reference(x, sentinel=_OBJECT):
        return x

    fn = ast.parse("def reference(x, sentinel=_OBJECT):\n    return x\n").body[0]
    assert isinstance(fn, ast.FunctionDef)
    with pytest.raises(TraceError, match=r"default of sentinel \(_OBJECT\) is a object"):
        resolve_defaults(fn.args, reference)


@pytest.mark.parametrize(
    ("value", "text"),
    [(float("-inf"), "float('-inf')"), ((1,), "(1,)"), ([1, "a"], "[1, 'a']"), (object(), None)],
)
def test_literal_text(value: object, text: str | None) -> None:
    assert literal_text(value) == text


SCALED_TOPK = """
import torch

TOP_K = 2
SCALE = 2.5
EPS = 1e-6


def scaled_topk(logits: torch.Tensor, topk: int = TOP_K, scale: float = SCALE, *, eps: float = EPS):
    top, ids = torch.topk(logits.sigmoid(), topk, dim=-1)
    return top / (top.sum(dim=-1, keepdim=True) + eps) * scale, ids.to(torch.int32)
"""
SCALED_TOPK_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(case["tokens"], 16, generator=g).to(device),), {}
"""


@pytest.mark.slow  # one trace (Dynamo, seconds)
def test_fusion_seed_defines_the_constants_its_defaults_read(tmp_path: Path) -> None:
    root = write_task(
        tmp_path / "scaled_topk",
        "scaled_topk",
        SCALED_TOPK,
        SCALED_TOPK_INPUTS,
        [{"name": "t3", "tokens": 3}],
    )
    source = write(root, trace(root)).source
    assert "TOP_K = 2\nSCALE = 2.5\nEPS = 1e-06\n" in source
    assert "topk=TOP_K, scale=SCALE, *, eps=EPS)" in source
    assert check(root, source) > 0
