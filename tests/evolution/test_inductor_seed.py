"""The Inductor seed end to end: torch.compile on a task's reference, Inductor's Triton code made standalone,
and the candidate judged on the interpreter (CPU) or the GPU. torch.compile takes seconds: marked slow."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
from pathlib import Path

import pytest
import torch

from evaluators.api import evaluate_candidate
from evaluators.config import EvalConfig
from evaluators.task import load_task
from evolution.mutators.inductor_seed import InductorSeedMutator
from evolution.mutators.launch_tuning import LaunchTuningMutator
from evolution.mutators.tuning_sites import find_sites
from evolution.types import MutationRequest, Program
from evolution.writers.inductor.capture import capture_task
from evolution.writers.inductor.host import LAUNCH_KNOB
from evolution.writers.inductor.kernels import InductorConversionError
from evolution.writers.inductor.render import render_candidate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
HAS_GPU = torch.cuda.is_available()

# Fused residual add (in place) + RMSNorm, with a float argument, in two dtypes.
RMS_REFERENCE = """import torch


def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
    residual.add_(x)
    h = residual.float()
    normed = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.float()).to(x.dtype)
"""
RMS_INPUTS = """import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    dtype = _DTYPES[case["dtype"]]
    t, h = case["tokens"], case["hidden"]
    x = torch.randn(t, h, generator=g).to(dtype).to(device)
    residual = (2 * torch.randn(t, h, generator=g)).to(dtype).to(device)
    weight = (1 + 0.1 * torch.randn(h, generator=g)).to(dtype).to(device)
    return (x, residual, weight), {"eps": float(case["eps"])}
"""
RMS_TOML = """name = "add_rmsnorm"
entry = "add_rmsnorm"
regime = "wall"
dynamic = ["tokens"]
seeds = 1

[[cases]]
name = "t1_fp32"
tokens = 1
hidden = 40
dtype = "float32"
eps = 1e-6

[[cases]]
name = "t3_fp32"
tokens = 3
hidden = 40
dtype = "float32"
eps = 1e-5

[[cases]]
name = "t5_bf16"
tokens = 5
hidden = 72
dtype = "bfloat16"
eps = 1e-6
"""
TOPK_REFERENCE = """import torch


def route(logits: torch.Tensor, k: int = 2):
    weights, ids = torch.topk(torch.sigmoid(logits), k, dim=-1)
    return weights / weights.sum(-1, keepdim=True), ids.to(torch.int32)
"""
TOPK_INPUTS = """import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(case["tokens"], 16, generator=g).to(device),), {"k": 2}
"""


def write_task(root: Path, toml: str, reference: str, inputs: str) -> Path:
    root.mkdir(parents=True)
    (root / "task.toml").write_text(toml)
    (root / "reference.py").write_text(reference)
    (root / "inputs.py").write_text(inputs)
    return root


def load_entry(source: str, path: Path, entry: str):
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, entry)


def check_against_reference(task, candidate, shapes: list[dict]) -> None:
    """Run candidate and reference on fresh inputs of each shape; outputs and in-place updates must agree."""
    reference = task.load_reference()
    for params in shapes:
        args, kwargs = task.load_make_inputs()(params, 7, "cpu")
        mine = [a.clone() if torch.is_tensor(a) else a for a in args]
        expected = reference(*args, **kwargs)
        got = candidate(*mine, **kwargs)
        tol = (
            {"atol": 2e-2, "rtol": 2e-2} if args[0].dtype == torch.bfloat16 else {"atol": 1e-5, "rtol": 1e-5}
        )
        torch.testing.assert_close(got, expected, **tol, msg=f"output differs for {params}")
        for before, after in zip(args, mine, strict=True):
            if torch.is_tensor(before):
                torch.testing.assert_close(after, before, **tol, msg=f"in-place update differs for {params}")


@pytest.fixture(scope="module")
def rms_task(tmp_path_factory):
    return load_task(write_task(tmp_path_factory.mktemp("rms") / "task", RMS_TOML, RMS_REFERENCE, RMS_INPUTS))


@pytest.fixture(scope="module")
def rms_candidate(rms_task):
    report = capture_task(str(rms_task.root), "cpu")
    assert report.error == "", report.error
    return report, render_candidate(report, rms_task.name, rms_task.entry)


@pytest.mark.slow
def test_seed_traces_one_generic_case_per_dtype(rms_candidate):
    report, source = rms_candidate
    # t1 would specialise tokens = 1 into the kernels: the smallest generic fp32 case is traced instead.
    assert sorted((c.case, c.variant) for c in report.captures) == [
        ("t3_fp32", "float32"),
        ("t5_bf16", "bfloat16"),
    ]
    assert "x.dtype == torch.float32" in source and "x.dtype == torch.bfloat16" in source
    assert "torch._inductor" not in source and "triton_heuristics" not in source
    # Each dtype's launch knobs carry its tag, in the naming the launch tuner reads back.
    knobs = {s.name: LAUNCH_KNOB.match(s.name) for s in find_sites(source) if s.key.startswith("name:")}
    assert knobs and all(m is not None for m in knobs.values()), knobs
    assert {m.group(1).split("_K")[0] for m in knobs.values() if m is not None} == {"FP32", "BF16"}
    assert (
        "def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float=1e-06)"
        in source
    )


@pytest.mark.slow
def test_the_hidden_size_is_a_constexpr_and_the_tokens_are_not(rms_candidate):
    """The capture tells the sizes that follow the dynamic tokens from those fixed for the model; a fixed one
    the kernel loops over or divides by is a tl.constexpr (as in torch.compile's kernels), the token count
    never is."""
    report, source = rms_candidate
    ints = {i.expr: i.dynamic for i in report.captures[0].inputs if i.kind == "symint"}
    assert ints == {"residual.shape[0]": True, "residual.shape[1]": False}
    kernels = [
        f for f in ast.parse(source).body if isinstance(f, ast.FunctionDef) and f.name.startswith("_red")
    ]
    assert len(kernels) == 2
    for kernel in kernels:
        constexprs = {a.arg for a in kernel.args.args if a.annotation is not None}
        assert {"r0_numel", "XBLOCK", "R0_BLOCK"} <= constexprs and "xnumel" not in constexprs
        # ks0, the hidden size too, is the mean's divisor, cast as tl.cast (a constexpr has no .to): a
        # constant, as in torch.compile's kernel.
        assert "ks0" in constexprs and "tl.cast(ks0, tl.float32)" in ast.unparse(kernel)


@pytest.mark.slow
def test_seed_is_correct_on_every_case_and_unseen_shapes_in_place_included(rms_task, rms_candidate, tmp_path):
    _, source = rms_candidate
    candidate = load_entry(source, tmp_path / "seed_rms.py", rms_task.entry)
    shapes = [dict(c.params) for c in rms_task.cases]
    shapes += [{"tokens": 2, "hidden": 130, "dtype": "float32", "eps": 1e-3}]  # sizes never traced
    shapes += [{"tokens": 9, "hidden": 24, "dtype": "bfloat16", "eps": 1e-6}]
    check_against_reference(rms_task, candidate, shapes)


@pytest.mark.slow
def test_tuned_seeds_stay_correct(rms_task, rms_candidate, tmp_path):
    _, source = rms_candidate
    parent = Program("seed", source, "sha", None, "seed:inductor", 0, 0)
    tuner = LaunchTuningMutator(seed=2, max_moves=3)
    for iteration in range(2):
        outcome = tuner.mutate_source(MutationRequest(task=rms_task, parent=parent, iteration=iteration))
        assert outcome.error == "" and outcome.child_source != source
        child = load_entry(outcome.child_source, tmp_path / f"tuned_{iteration}.py", rms_task.entry)
        check_against_reference(rms_task, child, [dict(c.params) for c in rms_task.cases])


@pytest.mark.slow
def test_seed_mutator_runs_compile_in_a_subprocess_and_passes_the_evaluator(tmp_path):
    toml = RMS_TOML.split('[[cases]]\nname = "t5_bf16"')[0]  # fp32 cases only: one compile
    task = load_task(write_task(tmp_path / "task", toml, RMS_REFERENCE, RMS_INPUTS))
    mutator = InductorSeedMutator(device="cpu")
    assert mutator.can_seed()
    outcome = asyncio.run(mutator.mutate(MutationRequest(task=task, parent=None)))
    assert outcome.error == "" and outcome.operator == "seed:inductor"
    config = EvalConfig(backend="triton-interpret", seeds_per_case=1)  # one seed: keeps the test short
    result = evaluate_candidate(task, outcome.child_source, config)
    assert result.correct and not result.hacks, (result.stage, result.reason, result.logs[-2000:])
    assert result.score == 1.0


@pytest.mark.slow
def test_aten_fallback_is_reported_not_seeded(tmp_path):
    toml = 'name = "route"\nentry = "route"\n[[cases]]\nname = "t4"\ntokens = 4\n'
    task = load_task(write_task(tmp_path / "task", toml, TOPK_REFERENCE, TOPK_INPUTS))
    report = capture_task(str(task.root), "cpu")
    with pytest.raises(InductorConversionError, match=r"falls back to ATen for aten\.topk"):
        render_candidate(report, task.name, task.entry)


def test_seed_mutator_takes_no_parent(rms_task):
    parent = Program("p", "x = 1\n", "sha", None, "seed:file", 0, 0)
    outcome = asyncio.run(InductorSeedMutator().mutate(MutationRequest(task=rms_task, parent=parent)))
    assert outcome.child_source is None and "only writes first candidates" in outcome.error


@pytest.mark.slow
@pytest.mark.skipif(not (EXAMPLES / "decode_metadata").is_dir(), reason="example tasks not present")
def test_decode_metadata_example_scan_gather_and_in_place_writes(tmp_path):
    task = load_task(EXAMPLES / "decode_metadata")
    report = capture_task(str(task.root), "cpu")
    source = render_candidate(report, task.name, task.entry)
    candidate = load_entry(source, tmp_path / "seed_decode.py", task.entry)
    reference = task.load_reference()
    small = sorted((c for c in task.cases if not c.is_captured), key=lambda c: c.params["batch"])[:3]
    for case in small:
        args, kwargs = task.make_inputs(case, 3, "cpu")
        mine = [a.clone() if torch.is_tensor(a) else a for a in args]
        assert reference(*args, **kwargs) is None and candidate(*mine, **kwargs) is None
        for expected, got in zip(args, mine, strict=True):
            if torch.is_tensor(expected):
                assert torch.equal(expected, got), case.name


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", ["silu_and_mul", "rmsnorm_residual", "decode_metadata"])
def test_cuda_seed_of_the_example_tasks_passes_the_evaluator(name):
    task = load_task(EXAMPLES / name)
    outcome = asyncio.run(
        InductorSeedMutator(device="cuda:0").mutate(MutationRequest(task=task, parent=None))
    )
    assert outcome.error == "", outcome.error
    result = evaluate_candidate(task, outcome.child_source, EvalConfig(backend="triton-cuda"))
    assert result.correct and not result.hacks, (result.stage, result.reason, result.logs[-2000:])


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
def test_cuda_seed_refuses_the_topk_router():
    task = load_task(EXAMPLES / "moe_grouped_topk")
    outcome = asyncio.run(
        InductorSeedMutator(device="cuda:0").mutate(MutationRequest(task=task, parent=None))
    )
    assert outcome.child_source is None and "aten.topk" in outcome.error


# What extracted methods look like: `from __future__` hints naming typing and engine names nothing imports,
# self attributes become keyword-only parameters with defaults the case leaves out, a None default, a
# module-level number, an in-place write into an argument and a tuple return.
EXTRACTED_REFERENCE = """from __future__ import annotations

import torch

_EPSILON = 1e-20


def fused_add_norm_forward(
    x: torch.Tensor,
    residual: Optional[torch.Tensor] = None,
    batch: Optional[ForwardBatch] = None,
    *,
    scale=2.0,
    cast_first=False,
    weight,
) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    if residual is not None:
        residual.add_(x)
        x = residual
    h = x.float()
    out = h / (h.abs().sum(dim=-1, keepdim=True) + _EPSILON) * scale
    out = (out * weight.float()).to(x.dtype) if not cast_first else out.to(x.dtype) * weight
    return out, residual
"""
EXTRACTED_INPUTS = """import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    t, h = case["tokens"], case["hidden"]
    x = torch.randn(t, h, generator=g).to(device)
    residual = torch.randn(t, h, generator=g).to(device)
    weight = (1 + 0.1 * torch.randn(h, generator=g)).to(device)
    return (x, residual), {"weight": weight}
"""
EXTRACTED_TOML = """name = "fused_add_norm_forward"
entry = "fused_add_norm_forward"
dynamic = ["tokens"]
seeds = 1

[[cases]]
name = "t1"
tokens = 1
hidden = 24

[[cases]]
name = "t6"
tokens = 6
hidden = 24
"""


@pytest.mark.slow
def test_seed_of_an_extracted_method_passes_the_evaluator(tmp_path):
    task = load_task(write_task(tmp_path / "task", EXTRACTED_TOML, EXTRACTED_REFERENCE, EXTRACTED_INPUTS))
    outcome = asyncio.run(InductorSeedMutator(device="cpu").mutate(MutationRequest(task=task, parent=None)))
    assert outcome.child_source is not None, outcome.error
    source = outcome.child_source
    # Hints it can resolve stay (typing names imported), the engine's class is dropped with its hint only.
    assert "from typing import Optional, Tuple, Union" in source and "ForwardBatch" not in source
    assert "batch=None" in source and "scale=2.0" in source and "1e-20" in source
    result = evaluate_candidate(task, source, EvalConfig(backend="triton-interpret", seeds_per_case=1))
    assert result.correct and not result.hacks, (result.stage, result.reason, result.logs[-2000:])


def test_a_crashed_capture_is_kernelbots_own_failure(tmp_path, rms_task):
    crashing = tmp_path / "python"
    crashing.write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\necho 'KeyError: placeholder' >&2\nexit 1\n"
    )
    crashing.chmod(0o755)
    outcome = asyncio.run(InductorSeedMutator(python=str(crashing)).mutate(MutationRequest(rms_task, None)))
    assert outcome.child_source is None and outcome.internal
    assert "capture process failed (exit 1)" in outcome.error and "KeyError: placeholder" in outcome.error


@pytest.mark.slow
def test_an_op_left_to_aten_is_the_tasks_limit_not_a_bug(tmp_path):
    toml = 'name = "route"\nentry = "route"\n[[cases]]\nname = "t4"\ntokens = 4\n'
    task = load_task(write_task(tmp_path / "task", toml, TOPK_REFERENCE, TOPK_INPUTS))
    outcome = asyncio.run(InductorSeedMutator(device="cpu").mutate(MutationRequest(task=task, parent=None)))
    assert outcome.child_source is None and not outcome.internal
    assert outcome.error.count("aten.topk.default") == 1
