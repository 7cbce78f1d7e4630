"""A task's own faults (inputs.py raising, a case with a negative size, a reference returning None) are named
as the task's: `kernelbot eval` prints one line and exits 1, and the candidate is not blamed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pool_tasks import GOOD, REFERENCE, TASK_TOML, write_task

from evaluators.result import EvalResult, Stage
from kernelbot import exit_codes
from kernelbot.cli import eval as eval_cmd
from kernelbot.cli import main

INTERPRET = ["--backend", "triton-interpret", "--seeds", "1"]


def _eval(task: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    candidate = tmp_path / "candidate.py"
    candidate.write_text(GOOD)
    code = main(["eval", str(task), str(candidate), *INTERPRET])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_inputs_that_raise_are_the_tasks_fault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = write_task(tmp_path)
    (task / "inputs.py").write_text("def make_inputs(case, seed, device):\n    raise KeyError('hidden')\n")
    code, out = _eval(task, tmp_path, capsys)
    assert code == exit_codes.USER_ERROR, out
    assert "task 'scale_shift': inputs.py fails on case" in out and "KeyError" in out
    assert "REJECTED" not in out and "returned" not in out


def test_a_negative_size_is_the_tasks_fault(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = write_task(tmp_path)
    (task / "task.toml").write_text(TASK_TOML + '\n[[cases]]\nname = "typo"\nn = -8\n')
    code, out = _eval(task, tmp_path, capsys)
    assert code == exit_codes.USER_ERROR, out
    assert "case 'typo' (negative parameters: {'n': -8})" in out and "REJECTED" not in out


def test_a_reference_returning_none_is_the_tasks_fault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = write_task(tmp_path)
    (task / "reference.py").write_text(REFERENCE.replace("return x * 2.0 + 1.0", "x * 2.0 + 1.0"))
    code, out = _eval(task, tmp_path, capsys)
    assert code == exit_codes.USER_ERROR, out
    assert "the reference returns None and writes none of its arguments" in out
    assert "returned T" not in out and "REJECTED" not in out


def test_a_fault_met_while_judging_maps_to_exit_1_not_a_rejection() -> None:
    # a later case's inputs fail after the candidate ran: the result carries the task's fault
    result = EvalResult(
        task="t", candidate_sha="x", backend="triton-interpret", regime="graph", stage=Stage.CORRECTNESS,
        passed=False, reason="task error: boom", task_fault="boom",
    )  # fmt: skip
    assert eval_cmd.exit_code(result) == exit_codes.USER_ERROR
    assert EvalResult.from_json(result.to_json()).task_fault == "boom"
