"""The envelope derived from a task's cases, and the guard rendered from it (run here on CPU tensors by
rendering it for device type "cpu")."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import libcst as cst
import pytest
import torch

from extractors.extract import ExtractOptions, extract
from kernelbot.integrate.derive_envelope import derive_envelope
from kernelbot.integrate.envelope import Envelope, TensorRule, ValueRule
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.guard_source import render_guard
from kernelbot.integrate.task_view import load_view
from tests.extractors.conftest import write_repo

ROOT = Path(__file__).resolve().parents[3]
SPECS = Path(__file__).parent / "specs"


def test_minirepo_rmsnorm_envelope(tmp_path: Path) -> None:
    task = tmp_path / "task"
    target = "minisglang.layers.layernorm:RMSNorm.forward_native"
    extract(
        ExtractOptions(
            ROOT / "examples" / "minirepo", target, out=task, spec=SPECS / "minisglang_rmsnorm.toml"
        )
    )
    derived = derive_envelope(load_view(task))
    envelope = derived.envelope
    assert envelope.rule("x") == TensorRule(
        "x", ("bfloat16",), (2,), ((1, (128,)),), ((0, ("tokens",)),), True, False
    )
    assert envelope.rule("weight") == TensorRule(
        "weight", ("float32",), (1,), ((0, (128,)),), (), True, False
    )
    assert envelope.rule("eps") == ValueRule("eps", (1e-06,))
    assert "x: bfloat16, 2-D, contiguous, dim 1 in {128}, dim 0 any size (tokens)" in envelope.describe()
    # Other batch sizes for the test, around the smallest and the largest listed case.
    tokens = {case["tokens"] for case in derived.other_cases}
    assert tokens == {2, 3, 26, 35}


def test_scalars_that_follow_a_dynamic_size_are_free_and_objects_refused(tmp_path: Path) -> None:
    repo = write_repo(
        tmp_path / "repo",
        {
            "toy/__init__.py": "",
            "toy/ops.py": "def head(x, n: int, mode: str = 'a', table=None):\n    return x[:n] * 2\n",
        },
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        textwrap.dedent(
            """
            [sizes]
            tokens = [4, 9]
            [args.x]
            shape = ["tokens", 8]
            [args.n]
            value = "tokens"
            [args.mode]
            text = "b"
            """
        )
    )
    extract(ExtractOptions(repo, "toy.ops:head", out=tmp_path / "task", spec=spec))
    envelope = derive_envelope(load_view(tmp_path / "task")).envelope
    assert envelope.rule("n") == ValueRule("n", (), free=True)
    assert envelope.rule("mode") == ValueRule("mode", ("b",))
    assert envelope.rule("table") == ValueRule("table", (None,))
    spec.write_text(spec.read_text() + '[args.table]\nexpr = "torch.nn.Identity()"\n')
    extract(ExtractOptions(repo, "toy.ops:head", out=tmp_path / "task", spec=spec, force=True))
    with pytest.raises(IntegrationError, match="cannot guard parameter 'table'"):
        derive_envelope(load_view(tmp_path / "task"))


def _guard(envelope: Envelope, signature: str) -> object:
    entry = cst.parse_statement(f"def entry({signature}):\n    pass\n")
    assert isinstance(entry, cst.FunctionDef)
    scope: dict = {"torch": torch}
    exec(render_guard(envelope, entry, "can_use", "kernel"), scope)
    return scope


def test_rendered_guard_accepts_the_envelope_and_nothing_else() -> None:
    x_rule = TensorRule("x", ("bfloat16",), (2,), ((1, (128, 256)),), ((0, ("tokens",)),), True, False)
    r_rule = TensorRule("residual", ("bfloat16",), (2,), ((1, (128, 256)),), ((0, ("tokens",)),), True, True)
    envelope = Envelope(
        "cpu", (x_rule, r_rule), (ValueRule("eps", (1e-06,)), ValueRule("mode", (None, "a"))), ("tokens",)
    )
    scope = _guard(envelope, "x, residual=None, *, eps, mode=None")
    can_use = scope["can_use"]
    x = torch.zeros(7, 256, dtype=torch.bfloat16)
    with torch.no_grad():
        assert can_use(x, eps=1e-06)
        assert can_use(x, x, eps=1e-06, mode="a")
        assert not can_use(x.float(), eps=1e-06)  # dtype
        assert not can_use(torch.zeros(7, 64, dtype=torch.bfloat16), eps=1e-06)  # fixed dim
        assert not can_use(x[None], eps=1e-06)  # rank
        assert not can_use(torch.zeros(256, 7, dtype=torch.bfloat16).t(), eps=1e-06)  # not contiguous
        assert not can_use(x, eps=1e-05) and not can_use(x, eps=1e-06, mode="b")  # values
    assert not can_use(x.requires_grad_(), eps=1e-06)  # would need a backward
    scope["ENABLED"] = False
    with torch.no_grad():
        assert not can_use(x, eps=1e-06)


def test_guard_compares_infinite_and_nan_floats() -> None:
    # a min-p filter's `filter_value=-float("inf")`: repr(-inf) is no Python, the guard must still compare it
    envelope = Envelope(
        "cpu", (), (ValueRule("fill", (-math.inf,)), ValueRule("pad", (math.nan, (1.0, math.inf)))), ()
    )
    can_use = _guard(envelope, "*, fill, pad")["can_use"]
    assert can_use(fill=-math.inf, pad=math.nan)
    assert can_use(fill=-math.inf, pad=(1.0, math.inf))
    assert not can_use(fill=math.inf, pad=math.nan)
    assert not can_use(fill=-math.inf, pad=0.0)
