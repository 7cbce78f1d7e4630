"""`kernelbot eval TASK CANDIDATE`: the real CLI, its output and the exit codes scripts rely on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from pool_tasks import GOOD, WRONG, write_task

from evaluators.result import CaseResult, EvalResult, HackFinding, Hardware, RegimeTiming, Stage, TimingStats
from kernelbot import exit_codes
from kernelbot.cli import eval as eval_cmd
from kernelbot.cli import main

INTERPRET = ["--backend", "triton-interpret"]


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task(tmp_path_factory.mktemp("cli"))


def candidate_file(tmp_path: Path, source: str, name: str = "candidate.py") -> Path:
    path = tmp_path / name
    path.write_text(source)
    return path


def test_a_passing_candidate_prints_a_summary_and_exits_0(
    task: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", str(task), str(candidate_file(tmp_path, GOOD)), *INTERPRET])
    out = capsys.readouterr().out
    assert code == exit_codes.OK, out
    assert "PASSED" in out and "scale_shift" in out and "stage reached: correctness" in out
    assert "n257" in out and "n1000" in out  # the per-case table
    assert "not timed" in out and "hardware:" in out


def test_json_output_is_the_full_eval_result_and_nothing_else(
    task: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["eval", str(task), str(candidate_file(tmp_path, WRONG)), *INTERPRET, "--json", "--seeds", "1"]
    )
    out = capsys.readouterr().out
    result = EvalResult.from_dict(json.loads(out))
    assert code == exit_codes.REJECTED
    assert result.stage is Stage.CORRECTNESS and not result.passed and result.task == "scale_shift"
    assert any(c.mismatch is not None for c in result.cases)


def _timed(
    ref_us: float, cand_us: float, low: float, high: float, claim: float | None = None
) -> RegimeTiming:
    return RegimeTiming(
        reference=TimingStats(median_us=ref_us, cv=0.002, samples=40),
        candidate=TimingStats(median_us=cand_us, cv=0.001, samples=40, outliers=2),
        speedup=ref_us / cand_us,
        ci_low=low,
        ci_high=high,
        claim_low=claim,
    )


def test_summary_shows_timings_ci_and_the_real_marker(capsys: pytest.CaptureFixture[str]) -> None:
    case = CaseResult(
        name="t1_d2048_bf16",
        params={"tokens": 1},
        passed=True,
        max_abs_error=1e-3,
        max_rel_error=2e-3,
        timings={"graph": _timed(10.0, 5.0, 1.9, 2.1, claim=1.8953), "wall": _timed(20.0, 19.0, 0.98, 1.1)},
    )
    result = EvalResult(
        task="silu_and_mul",
        candidate_sha="abc",
        backend="triton-cuda",
        regime="graph",
        stage=Stage.TIMING,
        passed=True,
        correct=True,
        reason="correct; speedup 2.000x (graph)",
        score=2.0,
        speedup=2.0,
        speedup_ci=(1.9, 2.1),
        cases=(case,),
        hardware=Hardware(
            backend="triton-cuda", device="NVIDIA H200", driver="570.1", torch="2.11", triton="3.6"
        ),
    )
    eval_cmd.render(result, Path("cand.py"))
    out = capsys.readouterr().out
    assert "PASSED" in out and "2.000x (CI 1.900 .. 2.100) real" in out
    assert "10.00 (0.20%)" in out and "5.00 (0.10%)" in out  # reference and candidate, median and CV
    assert "2.000x [1.900, 2.100] real" in out and "1.053x [0.980, 1.100]" in out
    # This process's bound: shown where the evaluator gave one, "-" where too few pairs did not.
    timing_rows = [line for line in out.splitlines() if line.startswith("t1_d2048_bf16") and "µs" not in line]
    graph = next(line for line in timing_rows if "graph*" in line)
    wall = next(line for line in timing_rows if " wall " in line)
    assert "bound >=" in out and graph.rstrip().endswith("1.895x") and wall.rstrip().endswith("-")
    assert "NVIDIA H200" in out and "driver 570.1" in out
    assert eval_cmd.exit_code(result) == exit_codes.OK


def test_summary_of_rejected_flagged_and_quarantined_results(capsys: pytest.CaptureFixture[str]) -> None:
    base = EvalResult(
        task="t", candidate_sha="s", backend="triton-cuda", regime="graph", stage=Stage.COMPILE, passed=False
    )
    rejected = base.with_updates(
        reason="compile: NameError: name 'tl_x' is not defined", logs="line1\nboom\n"
    )
    eval_cmd.render(rejected, Path("c.py"))
    out = capsys.readouterr().out
    assert "REJECTED" in out and "NameError" in out and "boom" in out
    assert eval_cmd.exit_code(rejected) == exit_codes.REJECTED
    hack = HackFinding("other_stream", "launched work on stream 7", detector="runtime")
    flagged = base.with_updates(stage=Stage.CORRECTNESS, hacks=(hack,), reason="flagged: other_stream")
    eval_cmd.render(flagged, Path("c.py"))
    out = capsys.readouterr().out
    assert "FLAGGED" in out and "hack #3 other_stream" in out and "launched work on stream 7" in out
    assert eval_cmd.exit_code(flagged) == exit_codes.FLAGGED
    roof = HackFinding("beyond_roofline", "1.2 us is below the 3.4 us floor")
    quarantined = base.with_updates(stage=Stage.TIMING, hacks=(roof,), quarantined=True)
    eval_cmd.render(quarantined, Path("c.py"))
    assert "QUARANTINED" in capsys.readouterr().out
    assert eval_cmd.exit_code(quarantined) == exit_codes.FLAGGED


def test_a_flagged_candidate_exits_5(task: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Computes the answer with PyTorch and launches a kernel only for show (hack class 11).
    fallback = GOOD.replace("    return out\n", "    return x * 2.0 + 1.0\n")
    code = main(["eval", str(task), str(candidate_file(tmp_path, fallback)), *INTERPRET, "--seeds", "1"])
    out = capsys.readouterr().out
    assert code == exit_codes.FLAGGED, out
    assert "FLAGGED" in out and "pytorch_fallback" in out


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no_task", "does not exist"),
        ("bad_toml", "is not valid TOML"),
        ("no_entry_field", "missing required field 'entry'"),
        ("no_candidate", "candidate file"),
        ("unparsable", "does not parse"),
        ("no_entry", "defines no top-level function 'scale_shift'"),
    ],
)
def test_bad_input_gets_one_clear_message_and_exit_1(
    setup: str, message: str, task: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_dir, cand = task, candidate_file(tmp_path, GOOD)
    if setup == "no_task":
        task_dir = tmp_path / "missing-task"
    elif setup in ("bad_toml", "no_entry_field"):
        task_dir = write_task(tmp_path, "broken")
        text = "name = [unclosed\n" if setup == "bad_toml" else 'name = "x"\n[[cases]]\nname = "a"\nn = 1\n'
        (task_dir / "task.toml").write_text(text)
    elif setup == "no_candidate":
        cand = tmp_path / "missing.py"
    elif setup == "unparsable":
        cand = candidate_file(tmp_path, "def scale_shift(x:\n", "broken.py")
    elif setup == "no_entry":
        cand = candidate_file(tmp_path, GOOD.replace("def scale_shift(", "def other("), "other.py")
    code = main(["eval", str(task_dir), str(cand), *INTERPRET])
    captured = capsys.readouterr()
    assert code == exit_codes.USER_ERROR
    assert message in captured.err and "error:" in captured.err
    assert "Traceback" not in captured.err + captured.out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown when no GPU is present")
def test_triton_cuda_without_a_gpu_says_so(
    task: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", str(task), str(candidate_file(tmp_path, GOOD)), "--backend", "triton-cuda"])
    err = capsys.readouterr().err
    assert code == exit_codes.USER_ERROR and "no CUDA GPU" in err and "triton-interpret" in err


def test_bad_flags_get_one_message(task: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cand = str(candidate_file(tmp_path, GOOD))
    assert main(["eval", str(task), cand, "--backend", "tpu"]) == exit_codes.USER_ERROR
    assert "unknown backend 'tpu'" in capsys.readouterr().err
    assert main(["eval", str(task), cand, *INTERPRET, "--seeds", "0"]) == exit_codes.USER_ERROR
    assert "--seeds must be at least 1" in capsys.readouterr().err


KERNELBENCH_PROBLEM = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""

RELU = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def forward(x):
    out = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out
"""


def test_a_kernelbench_problem_file_is_a_task_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problem = candidate_file(tmp_path, KERNELBENCH_PROBLEM, "19_ReLU.py")
    code = main(
        ["eval", str(problem), str(candidate_file(tmp_path, RELU)), *INTERPRET, "--json", "--seeds", "1"]
    )
    result = EvalResult.from_dict(json.loads(capsys.readouterr().out))
    assert code == exit_codes.OK and result.passed and result.task == "kernelbench_19_relu"


PREPARED = """
import torch
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 1.0, mask=mask)


def scale_shift(x):
    flat = x.contiguous().view(-1).float()
    out = torch.empty_like(flat)
    _k[(triton.cdiv(flat.numel(), 256),)](flat, out, flat.numel(), BLOCK=256)
    return out.view(x.shape)
"""


def test_a_wrapper_that_prepares_its_inputs_passes_with_a_note_of_what_it_saw(
    task: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", str(task), str(candidate_file(tmp_path, PREPARED)), *INTERPRET, "--seeds", "1"])
    out = capsys.readouterr().out
    assert code == exit_codes.OK, out
    note = next(line for line in out.splitlines() if line.startswith("host preparation:"))
    assert "x.contiguous(), x….float()" in note and "timed with the kernel" in note, note
    assert "view(" not in note  # a view copies nothing
