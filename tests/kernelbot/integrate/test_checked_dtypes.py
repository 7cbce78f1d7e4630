"""The guard and the generated test take exactly the dtypes the task's cases were built in, the ones the
evaluator checked the kernel in: a float32 spec for an engine serving bfloat16 gives a float32 guard and a
float32 test (the README's example once generated bfloat16 and float16 tests for a kernel only checked in
float32, which failed them), and a spec naming its dtype per case gives every dtype it names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import libcst as cst
import torch
import triton

from evaluators.static.facts import task_float_dtypes
from evaluators.task import load_task
from extractors.extract import ExtractOptions, extract
from kernelbot.engines import load_profile
from kernelbot.engines.specs import shipped_spec
from kernelbot.integrate.derive_envelope import derive_envelope
from kernelbot.integrate.envelope import Envelope, TensorRule
from kernelbot.integrate.guard_source import render_guard
from kernelbot.integrate.served_shapes import checked_dtypes, unchecked_dtypes
from kernelbot.integrate.task_view import load_view
from kernelbot.integrate.test_source import TestSubject, render_context

ROOT = Path(__file__).resolve().parents[3]
MINIREPO = ROOT / "examples" / "minirepo"
SILU = "minisglang.layers.activation:SiluAndMul.forward_native"
SUBJECT = TestSubject(
    source_module="minisglang.layers.activation",
    kernel_module="minisglang.kernels.ops.activation.silu_and_mul_triton",
    entry="silu_and_mul_triton",
    guard="can_use_silu_and_mul_triton",
    passed_attributes={},
)


def _test_dtypes(task: Path) -> set[str]:
    """The dtypes the generated test would run each case in."""
    context = render_context(load_view(task), SUBJECT, load_profile("example"), MINIREPO, ())
    return {d.strip().removeprefix("torch.") for d in context["dtypes"].split(",")}


def _can_use(envelope: Envelope) -> Callable[..., bool]:
    """The guard of `envelope` for an entry `(x)`, rendered for CPU tensors."""
    entry = cst.parse_statement("def entry(x):\n    pass\n")
    assert isinstance(entry, cst.FunctionDef)
    scope: dict = {"torch": torch, "triton": triton}
    on_cpu = Envelope("cpu", envelope.tensors, envelope.values, envelope.dynamic_keys)
    exec(render_guard(on_cpu, entry, "can_use"), scope)
    return scope["can_use"]  # type: ignore[no-any-return]


def _x_dtypes(envelope: Envelope) -> set[str]:
    rule = envelope.rule("x")
    assert isinstance(rule, TensorRule)
    return set(rule.dtypes)


def test_the_shipped_example_spec_checks_every_dtype_its_guard_admits(tmp_path: Path) -> None:
    spec = shipped_spec("example", SILU)
    assert spec is not None
    extract(ExtractOptions(MINIREPO, SILU, out=tmp_path / "task", spec=spec))
    task = load_task(tmp_path / "task")
    built = set(task_float_dtypes(task))  # what the evaluator builds the cases in
    assert built == {"float32", "bfloat16", "float16"}
    view = load_view(tmp_path / "task")
    envelope = derive_envelope(view).envelope
    assert _x_dtypes(envelope) == built == set(checked_dtypes(view)) == _test_dtypes(tmp_path / "task")
    assert unchecked_dtypes(view) == () == envelope.unchecked_dtypes
    # The guard, rendered for the CPU, admits each checked dtype and refuses float64.
    can_use = _can_use(envelope)
    with torch.no_grad():
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            assert can_use(torch.zeros(3, 32, dtype=dtype))
        assert not can_use(torch.zeros(3, 32, dtype=torch.float64))


def test_a_float32_spec_gives_a_float32_guard_and_test(tmp_path: Path) -> None:
    """The engine serves bfloat16 and float16 (its profile), but no case was built in them: the guard refuses
    them (the original code runs) and the test does not claim them."""
    spec = tmp_path / "spec.toml"
    spec.write_text('[sizes]\ntokens = [1, 5]\nd = 64\n[args.x]\nshape = ["tokens", "2 * d"]\n')
    extract(ExtractOptions(MINIREPO, SILU, out=tmp_path / "task", spec=spec))
    view = load_view(tmp_path / "task")
    envelope = derive_envelope(view).envelope
    assert _x_dtypes(envelope) == {"float32"} == _test_dtypes(tmp_path / "task")
    assert checked_dtypes(view) == ("float32",)
    assert unchecked_dtypes(view) == ("bfloat16", "float16") == envelope.unchecked_dtypes
    assert any(line.startswith("not in bfloat16, float16: the engine") for line in envelope.describe())
    can_use = _can_use(envelope)
    with torch.no_grad():
        assert can_use(torch.zeros(3, 32))
        assert not can_use(torch.zeros(3, 32, dtype=torch.bfloat16))
