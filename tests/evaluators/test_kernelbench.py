"""The KernelBench adapter: problem files become task directories the evaluator judges like any other."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from evaluators.backends.triton_interpret import TritonInterpretBackend
from evaluators.config import EvalConfig
from evaluators.context import JudgeContext
from evaluators.correctness import check_correctness
from evaluators.degenerate import check_degenerate
from evaluators.errors import TaskError
from evaluators.kernelbench import load_kernelbench

PROBLEMS = Path(__file__).parent / "kernelbench_problems"

LINEAR_RELU_CANDIDATE = """
import torch
import triton
import triton.language as tl


@triton.jit
def _linear_relu_kernel(x_ptr, w_ptr, b_ptr, s_ptr, out_ptr, M, N, K,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
    acc = tl.dot(x, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    acc = tl.maximum(acc, 0.0) + tl.load(s_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def forward(x, *, linear__weight, linear__bias, shift):
    m, k = x.shape
    n = linear__weight.shape[0]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    block_m = max(16, triton.next_power_of_2(m))
    block_k = max(16, triton.next_power_of_2(k))
    _linear_relu_kernel[(triton.cdiv(n, 16),)](
        x, linear__weight, linear__bias, shift, out, m, n, k, BLOCK_M=block_m, BLOCK_N=16, BLOCK_K=block_k
    )
    return out
"""


def test_a_problem_without_parameters(tmp_path: Path) -> None:
    task = load_kernelbench(PROBLEMS / "1_Square_matmul.py", tmp_path)
    assert task.name == "kernelbench_1_square_matmul" and task.entry == "forward"
    assert {p.name for p in task.root.iterdir()} >= {"task.toml", "problem.py", "reference.py", "inputs.py"}
    assert [c.params for c in task.cases] == [{"N": 32}]
    args, kwargs = task.make_inputs(task.cases[0], 5, "cpu")
    assert kwargs == {} and [tuple(a.shape) for a in args] == [(32, 32), (32, 32)]
    again, _ = task.make_inputs(task.cases[0], 5, "cpu")
    other, _ = task.make_inputs(task.cases[0], 6, "cpu")
    assert torch.equal(args[0], again[0]) and not torch.equal(args[0], other[0])
    assert torch.allclose(task.load_reference()(*args), args[0] @ args[1])


def test_parameters_and_buffers_become_keyword_inputs(tmp_path: Path) -> None:
    task = load_kernelbench(PROBLEMS / "40_Linear_ReLU.py", tmp_path)
    assert task.dynamic == ("batch_size",)
    args, kwargs = task.make_inputs(task.cases[0], 3, "cpu")
    assert set(kwargs) == {"linear__weight", "linear__bias", "shift"}
    expected = torch.relu(args[0] @ kwargs["linear__weight"].T + kwargs["linear__bias"]) + kwargs["shift"]
    assert torch.allclose(task.load_reference()(*args, **kwargs), expected, atol=1e-6)
    bigger = task.make_inputs(type(task.cases[0])("b", {**task.cases[0].params, "batch_size": 13}), 3, "cpu")
    assert bigger[0][0].shape == (13, 16)  # the case's constants reach get_inputs
    assert check_degenerate(task, "cpu") is None


def test_the_task_directory_is_cached_by_content(tmp_path: Path) -> None:
    first = load_kernelbench(PROBLEMS / "1_Square_matmul.py", tmp_path)
    second = load_kernelbench(PROBLEMS / "1_Square_matmul.py", tmp_path)
    assert first.root == second.root
    changed = tmp_path / "1_Square_matmul.py"
    changed.write_text((PROBLEMS / "1_Square_matmul.py").read_text().replace("N = 32", "N = 48"))
    assert load_kernelbench(changed, tmp_path / "cache").root != first.root


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("def get_inputs():\n    return []\n", "defines no class Model"),
        (
            "import torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, *xs):\n        return xs\n"
            "def get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n",
            "*args",
        ),
        (
            "class Model:\n    pass\ndef get_inputs():\n    return []\n"
            "def get_init_inputs():\n    return []\n",
            "no forward",
        ),
        ("def broken(:\n", "does not parse"),
    ],
)
def test_bad_problem_files_name_the_problem(tmp_path: Path, source: str, fragment: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(TaskError) as info:
        load_kernelbench(path, tmp_path / "cache")
    assert fragment in str(info.value) and str(path) in str(info.value)
    with pytest.raises(TaskError, match="does not exist"):
        load_kernelbench(tmp_path / "missing.py", tmp_path / "cache")


def test_a_triton_candidate_passes_the_adapted_task(tmp_path: Path) -> None:
    task = load_kernelbench(PROBLEMS / "40_Linear_ReLU.py", tmp_path)
    path = tmp_path / "candidate.py"
    path.write_text(LINEAR_RELU_CANDIDATE)
    spec = importlib.util.spec_from_file_location("kb_kernelbench_candidate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ctx = JudgeContext(
        task=task,
        backend=TritonInterpretBackend(),
        config=EvalConfig(backend="triton-interpret", drift_calls=3),
        seeds=(11, 12),
        reference=task.load_reference(),
        candidate=module.forward,
        candidate_module=module,
        candidate_path=path,
        candidate_source=LINEAR_RELU_CANDIDATE,
        log=lambda text: None,
    )
    report = check_correctness(ctx)
    assert report.passed, report.reason
    assert not report.findings, report.findings
    assert any(c.hidden and c.params["batch_size"] != 8 for c in report.cases)
