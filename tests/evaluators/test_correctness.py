"""The correctness stage, in process: plain-PyTorch "candidates" on the adversarial suite's tiny tasks
exercise every behavioural check (most with runtime_checks off: a PyTorch candidate is a fallback anyway)."""

from __future__ import annotations

import importlib.util
import itertools
import textwrap
from pathlib import Path

import pytest
import torch

from evaluators.backends.triton_interpret import TritonInterpretBackend
from evaluators.config import EvalConfig
from evaluators.context import JudgeContext
from evaluators.correctness import check_call, check_correctness
from evaluators.correctness.reference import clone_inputs, refill, run_reference
from evaluators.degenerate import check_degenerate
from evaluators.task import load_task
from tests.example_tasks import ONE_TOKEN_FP16, silu_and_mul_task

TASKS = Path(__file__).parents[1] / "adversarial" / "tasks"
BEHAVIOUR_ONLY = EvalConfig(backend="triton-interpret", runtime_checks=False)
_counter = itertools.count()


def make_ctx(
    tmp_path: Path, task: str | Path, source: str, config: EvalConfig = BEHAVIOUR_ONLY
) -> JudgeContext:
    loaded = load_task(task if isinstance(task, Path) else TASKS / task)
    path = tmp_path / f"candidate_{next(_counter)}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return JudgeContext(
        task=loaded,
        backend=TritonInterpretBackend(),
        config=config,
        seeds=(101, 202, 303),
        reference=loaded.load_reference(),
        candidate=getattr(module, loaded.entry),
        candidate_module=module,
        candidate_path=path,
        candidate_source=path.read_text(),
        log=lambda text: None,
    )


def kinds(report) -> set[str]:
    return {f.kind for f in report.findings}


def test_a_correct_candidate_passes_every_case_and_a_hidden_one(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "scale_add", "def scale_add(x, y, alpha):\n    return x * alpha + y\n")
    report = check_correctness(ctx)
    assert report.passed, report.reason
    assert not report.findings
    assert [c.name for c in report.timeable] == ["n1000", "n3000"]
    assert report.reference_precision == "float64"
    hidden = [c for c in report.cases if c.hidden]
    assert hidden and hidden[0].passed and hidden[0].params["n"] not in (1000, 3000)


def test_expected_answers_are_kept_only_for_the_case_called_again(tmp_path: Path) -> None:
    # The stage keeps earlier expected answers (float64 copies included) to recognise a cached result; only
    # the first case is called again (repeated calls), so every other case's answers are let go.
    from evaluators.correctness.stage import _HISTORY, _Stage

    ctx = make_ctx(tmp_path, "scale_add", "def scale_add(x, y, alpha):\n    return x * alpha + y\n")
    stage = _Stage(ctx)
    report = stage.run()
    assert report.passed, report.reason
    assert list(stage.history) == ["n1000"]
    assert len(stage.history["n1000"]) == min(_HISTORY, len(ctx.seeds) + ctx.config.drift_calls)


def test_a_wrong_candidate_fails_with_the_case_and_the_element(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "scale_add", "def scale_add(x, y, alpha):\n    return x * alpha - y\n")
    report = check_correctness(ctx)
    assert not report.passed and not report.timeable
    assert "case n1000, seed #1" in report.reason and "return[" in report.reason
    first = report.cases[0]
    assert not first.passed and first.mismatch is not None and first.mismatch.output == "return"


def test_an_exception_is_the_candidates_failure(tmp_path: Path) -> None:
    source = "def scale_add(x, y, alpha):\n    raise ValueError('no kernel today')\n"
    report = check_correctness(make_ctx(tmp_path, "scale_add", source))
    assert not report.passed and "ValueError: no kernel today" in report.reason


def test_mutating_an_input_is_class_2(tmp_path: Path) -> None:
    source = "def scale_add(x, y, alpha):\n    return x.mul_(alpha).add_(y)\n"
    report = check_correctness(make_ctx(tmp_path, "scale_add", source))
    assert "input_mutation" in kinds(report)
    assert any("'x'" in f.evidence for f in report.findings)


def test_in_place_semantics_are_part_of_the_output(tmp_path: Path) -> None:
    good = check_correctness(
        make_ctx(tmp_path, "inplace_axpy", "def axpy_(y, x, alpha):\n    y.add_(alpha * x)\n")
    )
    assert good.passed and not good.findings, good.reason
    lazy = check_correctness(make_ctx(tmp_path, "inplace_axpy", "def axpy_(y, x, alpha):\n    return None\n"))
    assert not lazy.passed and "y[" in lazy.reason


def test_recycled_memory_is_class_1(tmp_path: Path) -> None:
    source = "import torch\ndef scale_add(x, y, alpha):\n    return torch.empty_like(x)\n"
    report = check_correctness(make_ctx(tmp_path, "scale_add", source))
    assert not report.passed
    assert "allocator_reuse" in kinds(report)


def test_a_tensor_subclass_is_class_5(tmp_path: Path) -> None:
    source = """
    import torch
    class Later(torch.Tensor):
        pass
    def scale_add(x, y, alpha):
        return (x * alpha + y).as_subclass(Later)
    """
    assert "lazy_output" in kinds(check_correctness(make_ctx(tmp_path, "scale_add", source)))


def test_a_cache_keyed_by_buffer_is_class_7(tmp_path: Path) -> None:
    source = """
    _seen = {}
    def scale_add(x, y, alpha):
        key = (x.data_ptr(), y.data_ptr(), x.numel())
        if key not in _seen:
            _seen[key] = x * alpha + y
        return _seen[key]
    """
    report = check_correctness(make_ctx(tmp_path, "scale_add", source))
    assert not report.passed
    assert "output_caching" in kinds(report)


def test_a_call_counter_is_class_8(tmp_path: Path) -> None:
    source = """
    import torch
    _calls = [0]
    def scale_add(x, y, alpha):
        _calls[0] += 1
        return x * alpha + y if _calls[0] <= 2 else torch.zeros_like(x)
    """
    report = check_correctness(make_ctx(tmp_path, "scale_add", source))
    drift = [f for f in report.findings if f.kind == "drift"]
    assert drift and "same input values" in drift[0].evidence


def test_correct_only_on_listed_sizes_is_class_13(tmp_path: Path) -> None:
    source = """
    def scale_add(x, y, alpha):
        out = x * alpha + y
        if x.numel() not in (1000, 3000):
            out[1024:] = 0.0
        return out
    """
    report = check_correctness(make_ctx(tmp_path, "scale_add", source))
    assert not report.passed
    finding = next(f for f in report.findings if f.kind == "hardcoded_shapes")
    assert "unlisted shape n=" in finding.evidence


def test_a_degenerate_task_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "vanishing_scale", "def vanishing_scale(x):\n    return x * 1e-9\n")
    report = check_correctness(ctx)
    assert not report.passed and report.reason.startswith("degenerate task")
    assert kinds(report) == {"degenerate_task"}
    assert check_degenerate(load_task(TASKS / "scale_add"), "cpu") is None


def test_a_degenerate_task_is_refused_with_a_single_seed_per_case_too(tmp_path: Path) -> None:
    # The stage reads degeneracy off the answers its seeds produced; with one seed it runs two more.
    import dataclasses

    ctx = make_ctx(tmp_path, "vanishing_scale", "def vanishing_scale(x):\n    return x * 1e-9\n")
    report = check_correctness(dataclasses.replace(ctx, seeds=(101,)))
    assert not report.passed and report.reason.startswith("degenerate task")
    assert kinds(report) == {"degenerate_task"}
    healthy = make_ctx(tmp_path, "scale_add", "def scale_add(x, y, alpha):\n    return x * alpha + y\n")
    assert check_correctness(dataclasses.replace(healthy, seeds=(101,))).passed
    # Switched off (a confirmation process, after a search judged the task), the task is not re-judged.
    off = dataclasses.replace(ctx.config, degenerate_check=False)
    unchecked = dataclasses.replace(ctx, seeds=(101,), config=off)
    assert check_correctness(unchecked).passed


def test_cases_too_big_for_the_interpreter_are_skipped_with_a_reason(tmp_path: Path) -> None:
    config = EvalConfig(backend="triton-interpret", runtime_checks=False, interpret_max_numel=2500)
    ctx = make_ctx(tmp_path, "scale_add", "def scale_add(x, y, alpha):\n    return x * alpha + y\n", config)
    report = check_correctness(ctx)
    assert report.passed
    skipped = {c.name: c.skipped for c in report.cases if c.skipped}
    assert list(skipped) == ["n3000"] and "interpret_max_numel" in skipped["n3000"]
    assert [c.name for c in report.timeable] == ["n1000"]
    tiny = EvalConfig(backend="triton-interpret", runtime_checks=False, interpret_max_numel=10)
    ctx = make_ctx(tmp_path, "scale_add", "def scale_add(x, y, alpha):\n    return x * alpha + y\n", tiny)
    nothing = check_correctness(ctx)
    assert not nothing.passed and "no case can run" in nothing.reason


def test_runtime_checks_see_pytorch_compute_and_the_reference(tmp_path: Path) -> None:
    config = EvalConfig(backend="triton-interpret")
    torch_ops = make_ctx(
        tmp_path, "scale_add", "def scale_add(x, y, alpha):\n    return x * alpha + y\n", config
    )
    report = check_correctness(torch_ops)
    evidence = " ".join(f.evidence for f in report.findings if f.kind == "pytorch_fallback")
    assert "aten.mul.Tensor" in evidence and "aten.add.Tensor" in evidence
    source = """
    import sys
    def scale_add(x, y, alpha):
        ref = next(m for n, m in sys.modules.items() if n.startswith("kb_reference_scale_add"))
        return ref.scale_add(x, y, alpha)
    """
    report = check_correctness(make_ctx(tmp_path, "scale_add", source, config))
    assert any("ran the task's reference" in f.evidence for f in report.findings)


def test_the_reference_falls_back_to_native_precision(tmp_path: Path) -> None:
    task = tmp_path / "fp32_only"
    task.mkdir()
    for name in ("task.toml", "inputs.py"):
        (task / name).write_text((TASKS / "scale_add" / name).read_text().replace("scale_add", "fp32_only"))
    (task / "reference.py").write_text(
        "import torch\n"
        "def fp32_only(x, y, alpha):\n"
        "    assert x.dtype == torch.float32, 'float32 only'\n"
        "    return x * alpha + y\n"
    )
    ctx = make_ctx(tmp_path, task, "def fp32_only(x, y, alpha):\n    return x * alpha + y\n")
    report = check_correctness(ctx)
    assert report.passed and report.reference_precision == "native"
    assert "float32 only" in ctx.notes["reference_precision_reason"]


def test_check_call_rejudges_a_call_made_elsewhere(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "scale_add", "def scale_add(x, y, alpha):\n    return x * alpha + y\n")
    case = ctx.task.cases[0]
    inputs = ctx.task.make_inputs(case, 7, "cpu")
    before = clone_inputs(inputs)
    out = ctx.candidate(*inputs[0])
    assert check_call(ctx, case, before, out, inputs).comparison.ok
    wrong = check_call(ctx, case, before, out + 1, inputs)
    assert not wrong.comparison.ok and "return" in wrong.comparison.reason
    inputs[0][1].add_(1)  # y changed after the call: the reference never writes y
    mutated = check_call(ctx, case, before, out, inputs)
    assert ("input_mutation" in {k for k, _ in mutated.findings}) and not mutated.comparison.ok


def test_reference_runs_on_clones_and_refill_keeps_the_buffers(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, "inplace_axpy", "def axpy_(y, x, alpha):\n    y.add_(alpha * x)\n")
    inputs = ctx.task.make_inputs(ctx.task.cases[0], 1, "cpu")
    pristine = clone_inputs(inputs)
    run = run_reference(ctx, inputs)
    assert torch.equal(inputs[0][0], pristine[0][0])  # the reference never touches the caller's tensors
    assert list(run.mutated) == ["y"] and run.dtypes["y"] == torch.float32
    fresh = ctx.task.make_inputs(ctx.task.cases[0], 2, "cpu")
    refilled = refill(inputs, fresh)
    assert refilled is not None and refilled[0][0] is inputs[0][0]
    assert torch.equal(inputs[0][0], fresh[0][0])
    other = ctx.task.make_inputs(ctx.task.cases[1], 2, "cpu")
    assert refill(inputs, other) is None


@pytest.mark.parametrize("strided", [False, True])
def test_clone_inputs_keeps_strides_and_views(strided: bool) -> None:
    base = torch.arange(24.0).view(4, 6)
    view = base[:, 1:5] if strided else base
    (clone,), _ = clone_inputs(((view,), {}))
    assert clone.stride() == view.stride() and clone.storage_offset() == view.storage_offset()
    assert torch.equal(clone, view) and clone.data_ptr() != view.data_ptr()


def test_each_dtype_gets_a_hidden_case(tmp_path: Path) -> None:
    """A kernel specialised to the one token count its dtype's only case has (an Inductor capture at one
    token: one output row whatever the batch) fails a hidden case of that dtype, though the smallest case
    overall is another dtype's."""
    task_dir = silu_and_mul_task(tmp_path, cases=ONE_TOKEN_FP16)
    source = """
    import torch
    import torch.nn.functional as F
    def silu_and_mul(x):
        d = x.shape[-1] // 2
        rows = x[:1] if x.dtype == torch.float16 else x
        return F.silu(rows[:, :d]) * rows[:, d:]
    """
    report = check_correctness(make_ctx(tmp_path, task_dir, source))
    assert not report.passed
    finding = next(f for f in report.findings if f.kind == "hardcoded_shapes")
    assert "unlisted shape tokens=" in finding.evidence
    hidden = [c for c in report.cases if c.hidden]
    assert len(hidden) >= 2
