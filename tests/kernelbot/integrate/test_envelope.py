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
from kernelbot.integrate.envelope import Envelope, SameSize, TensorRule, ValueRule
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
    # Sizes follow the case's keys (tokens, hidden): none is pinned. The activations are allowed in the
    # dtypes the cases built them in (the spec's dtype size); the fp32 weight stays fp32.
    assert envelope.rule("x") == TensorRule(
        "x", ("bfloat16", "float16"), (2,), (), ((0, ("tokens",)), (1, ("hidden",))), True, False
    )
    assert envelope.rule("weight") == TensorRule(
        "weight", ("float32",), (1,), (), ((0, ("hidden",)),), True, False
    )
    assert envelope.rule("eps") == ValueRule("eps", (), free=True, kind="float")
    # The kernel indexes the residual and the weight with x's sizes: the guard asks for them to match.
    conditions = [link.condition() for link in envelope.same_sizes]
    assert conditions == ["residual.shape == x.shape", "weight.shape[0] == x.shape[1]"]
    assert "x: bfloat16, float16, 2-D, contiguous, fewer than 2**31 elements" in envelope.describe()
    assert "eps: any float" in envelope.describe()
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
    assert envelope.rule("n") == ValueRule("n", (), free=True, kind="int")
    assert envelope.rule("mode") == ValueRule("mode", ("b",))
    assert envelope.rule("table") == ValueRule("table", (None,))
    spec.write_text(spec.read_text() + '[args.table]\nexpr = "torch.nn.Identity()"\n')
    extract(ExtractOptions(repo, "toy.ops:head", out=tmp_path / "task", spec=spec, force=True))
    with pytest.raises(IntegrationError, match="cannot guard parameter 'table'"):
        derive_envelope(load_view(tmp_path / "task"))


def _entry(signature: str) -> cst.FunctionDef:
    entry = cst.parse_statement(f"def entry({signature}):\n    pass\n")
    assert isinstance(entry, cst.FunctionDef)
    return entry


def _guard(envelope: Envelope, signature: str, body: str = "pass") -> dict:
    import triton

    entry = cst.parse_statement(f"def entry({signature}):\n    {body}\n")
    assert isinstance(entry, cst.FunctionDef)
    scope: dict = {"torch": torch, "triton": triton}
    exec(render_guard(envelope, entry, "can_use"), scope)
    return scope


def test_rendered_guard_accepts_the_envelope_and_nothing_else() -> None:
    x_rule = TensorRule("x", ("bfloat16",), (2,), ((1, (128, 256)),), ((0, ("tokens",)),), True, False)
    r_rule = TensorRule("residual", ("bfloat16",), (2,), ((1, (128, 256)),), ((0, ("tokens",)),), True, True)
    values = (
        ValueRule("eps", (), free=True, kind="float"),
        ValueRule("topk", (), free=True, kind="int"),
        ValueRule("mode", (None, "a")),
    )
    same = (SameSize("residual", "x", optional=True),)
    envelope = Envelope("cpu", (x_rule, r_rule), values, ("tokens",), same_sizes=same)
    signature = "x, residual=None, *, eps, topk=8, mode=None"
    source = render_guard(envelope, _entry(signature), "can_use")
    # The sizes the cases had (128, 256) are what was checked, never a condition.
    assert "128" not in source and "256" not in source
    scope = _guard(envelope, signature)
    can_use = scope["can_use"]
    x = torch.zeros(7, 256, dtype=torch.bfloat16)
    with torch.no_grad():
        assert can_use(x, eps=1e-06)
        assert can_use(x, x, eps=1e-06, mode="a")
        assert can_use(torch.zeros(7, 64, dtype=torch.bfloat16), eps=1e-06)  # any size
        assert can_use(x, eps=1e-05) and can_use(x, eps=float("-inf"), topk=2)  # floats and sizes: any
        assert not can_use(x, eps="1e-6") and not can_use(x, eps=1e-6, topk=2.0)  # of their type only
        assert not can_use(x, eps=1e-6, topk=True)
        assert not can_use(x.float(), eps=1e-06)  # dtype
        assert not can_use(x[None], eps=1e-06)  # rank
        assert not can_use(torch.zeros(256, 7, dtype=torch.bfloat16).t(), eps=1e-06)  # not contiguous
        assert not can_use(x, eps=1e-06, mode="b")  # a switch's value
        assert not can_use(x, x[:1], eps=1e-06)  # a residual PyTorch would broadcast, the kernel not
    assert not can_use(x.requires_grad_(), eps=1e-06)  # would need a backward
    scope["ENABLED"] = False
    with torch.no_grad():
        assert not can_use(x, eps=1e-06)


def test_the_guard_refuses_tensors_beyond_int32_offsets() -> None:
    """A real limit of Triton kernels, checked without allocating: the guard rendered for meta tensors."""
    rule = TensorRule("x", ("bfloat16",), (2,), (), ((0, ("tokens",)),), True, False)
    scope = _guard(Envelope("meta", (rule,), (), ("tokens",)), "x")
    with torch.no_grad():
        assert scope["can_use"](torch.empty(2**16, 2**15 - 1, dtype=torch.bfloat16, device="meta"))
        assert not scope["can_use"](torch.empty(2**16, 2**15, dtype=torch.bfloat16, device="meta"))


def test_a_float_parameter_is_passed_on_whatever_its_value(tmp_path: Path) -> None:
    """`filter_value = -inf` (a sampling filter's fill) is a float the kernel takes as it is: the guard checks
    its type only, where it used to refuse to guard a non-finite float."""
    repo = write_repo(
        tmp_path / "repo",
        {
            "toy/__init__.py": "",
            "toy/ops.py": (
                "import torch\n\n\ndef keep_top(logits, k: int, filter_value: float = -float('inf')):\n"
                "    kth = torch.topk(logits, k, dim=-1).values[..., -1:]\n"
                "    return logits.masked_fill(logits < kth, filter_value)\n"
            ),
        },
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        "[sizes]\ntokens = [2, 5]\nvocab = 64\ntopk = 8\n"
        '[args.logits]\nshape = ["tokens", "vocab"]\n[args.k]\nvalue = "topk"\n'
    )
    extract(ExtractOptions(repo, "toy.ops:keep_top", out=tmp_path / "task", spec=spec))
    envelope = derive_envelope(load_view(tmp_path / "task")).envelope
    assert envelope.rule("filter_value") == ValueRule("filter_value", (), free=True, kind="float")
    assert envelope.rule("k") == ValueRule("k", (), free=True, kind="int")  # follows the topk size
    rule = envelope.rule("logits")
    assert isinstance(rule, TensorRule) and rule.fixed_dims == ()
    # A float32 spec: the evaluator checked float32 only, so the guard admits float32 only, whatever dtypes
    # the engine serves.
    assert rule.dtypes == ("float32",)


def test_a_padded_register_extent_is_limited_to_tritons_largest_tensor() -> None:
    """The entry compiles its kernel for `triton.next_power_of_2(x.shape[1])` (a constexpr): the guard's one
    size condition is Triton's real limit on it, 2**20 elements, not the sizes the cases had. A padded extent
    capped by min(BLOCK, ...) is tiled: no condition."""
    rule = TensorRule("x", ("bfloat16",), (2,), (), ((0, ("tokens",)),), True, False)
    body = "s1 = x.shape[1]; rows = min(BLOCK, triton.next_power_of_2(x.shape[0]))"
    body += "; w = triton.next_power_of_2(s1)"
    scope = _guard(Envelope("meta", (rule,), (), ("tokens",)), "x", body)
    with torch.no_grad():
        assert scope["can_use"](torch.empty(2**20, 2**10, dtype=torch.bfloat16, device="meta"))
        assert scope["can_use"](torch.empty(1, 2**20, dtype=torch.bfloat16, device="meta"))
        assert not scope["can_use"](torch.empty(1, 2**20 + 1, dtype=torch.bfloat16, device="meta"))


def test_a_row_split_into_groups_needs_whole_groups() -> None:
    """The MoE router's kernel holds a row of experts as `num_expert_group` groups of `e // num_expert_group`
    lanes (the reference's `view(n, num_expert_group, -1)`): the guard lets a call through only where the
    groups divide the experts, as the view requires, and refuses no groups without dividing by zero. The
    sizes read from an unpacked shape are bounded too, in one max()."""
    rule = TensorRule("x", ("float32",), (2,), (), ((0, ("tokens",)),), True, False)
    groups = ValueRule("groups", (), free=True, kind="int")
    body = "n, e = x.shape; w = triton.next_power_of_2(e); g = triton.next_power_of_2(e // groups)"
    envelope = Envelope("meta", (rule,), (groups,), ("tokens",))
    entry = cst.parse_statement(f"def entry(x, groups):\n    {body}\n")
    assert isinstance(entry, cst.FunctionDef)
    source = render_guard(envelope, entry, "can_use")
    assert "x.shape[1] % groups == 0" in source
    assert "x.shape[1] // groups" not in source  # no bound of its own: never above x.shape[1]
    can_use = _guard(envelope, "x, groups", body)["can_use"]
    with torch.no_grad():
        assert can_use(torch.empty(3, 256, device="meta"), 8)
        assert not can_use(torch.empty(3, 250, device="meta"), 8)
        assert not can_use(torch.empty(3, 256, device="meta"), 0)
        assert not can_use(torch.empty(3, 256, device="meta"), -8)
        assert not can_use(torch.empty(1, 2**20 + 8, device="meta"), 8)  # the padded row: too wide


def test_a_group_count_the_guard_pins_needs_no_check_of_its_own() -> None:
    """`groups == 8` comes first in the guard: `groups > 0` and a bound on its padded extent would restate
    it. The experts must still split into whole groups, and their row fit Triton's largest tensor."""
    rule = TensorRule("x", ("float32",), (2,), (), ((0, ("tokens",)),), True, False)
    groups = ValueRule("groups", (8,))
    body = "n, e = x.shape; w = triton.next_power_of_2(e); g = triton.next_power_of_2(groups)"
    body += "; s = triton.next_power_of_2(e // groups)"
    envelope = Envelope("meta", (rule,), (groups,), ("tokens",))
    entry = cst.parse_statement(f"def entry(x, groups):\n    {body}\n")
    assert isinstance(entry, cst.FunctionDef)
    source = render_guard(envelope, entry, "can_use")
    assert "groups > 0" not in source and "max(" not in source
    assert "groups == 8" in source and "x.shape[1] % groups == 0" in source
    assert "x.shape[1] <= 1048576" in source
    can_use = _guard(envelope, "x, groups", body)["can_use"]
    with torch.no_grad():
        assert can_use(torch.empty(3, 256, device="meta"), 8)
        assert not can_use(torch.empty(3, 250, device="meta"), 8)
        assert not can_use(torch.empty(3, 256, device="meta"), 0)
        assert not can_use(torch.empty(1, 2**20 + 8, device="meta"), 8)


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
