"""The LLM prompt: Jinja2 templates rendered with the parent's structured feedback and the hardware facts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from evaluators.result import (
    CaseResult,
    EvalResult,
    HackFinding,
    Hardware,
    KernelTime,
    Mismatch,
    RegimeTiming,
    Stage,
    TimingStats,
)
from evaluators.task import load_task
from evolution.mutators.feedback import build_feedback
from evolution.mutators.prompts import PROMPTS_DIR, render_prompt
from evolution.types import Program

H200 = Hardware(
    backend="triton-cuda",
    device="NVIDIA H200",
    torch="2.11.0",
    triton="3.6.0",
    runtime="CUDA 12.8",
    sm_count=132,
    memory_bandwidth_gbps=4800.0,
)
SOURCE = "import torch\n\n# EVOLVE-BLOCK-START\ndef scale(x):\n    return x * 2\n# EVOLVE-BLOCK-END\n"


def write_task(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "task.toml").write_text(
        'name = "tiny_scale"\nentry = "scale"\nregime = "graph"\ndescription = "Doubles a vector."\n'
        '[[cases]]\nname = "n8"\nn = 8\n[[cases]]\nname = "n4096"\nn = 4096\n'
    )
    (root / "reference.py").write_text(
        "import torch\n\n\ndef scale(x):\n    return x * 2  # REFERENCE-MARK\n"
    )
    (root / "inputs.py").write_text("def make_inputs(case, seed, device):\n    raise NotImplementedError\n")
    return root


def timing(ref_us: float, cand_us: float, lo: float, hi: float) -> RegimeTiming:
    return RegimeTiming(
        TimingStats(ref_us, 0.004, 40), TimingStats(cand_us, 0.011, 40), ref_us / cand_us, lo, hi
    )


def timed_result() -> EvalResult:
    fast = CaseResult(
        "n4096",
        {"n": 4096},
        True,
        max_abs_error=3e-7,
        max_rel_error=1e-7,
        timings={"graph": timing(10.0, 6.25, 1.52, 1.68), "wall": timing(21.0, 20.0, 0.97, 1.12)},
    )
    return EvalResult(
        task="tiny_scale",
        candidate_sha="abc",
        backend="triton-cuda",
        regime="graph",
        stage=Stage.TIMING,
        passed=True,
        correct=True,
        score=1.6,
        speedup=1.6,
        speedup_ci=(1.52, 1.68),
        cases=(fast,),
        hardware=H200,
    )


def failing_result() -> EvalResult:
    wrong = CaseResult(
        "n8",
        {"n": 8},
        False,
        max_abs_error=4.0,
        max_rel_error=1.0,
        mismatch=Mismatch("return", (5,), 4.0, 0.0, "tail element never written"),
    )
    return EvalResult(
        task="tiny_scale",
        candidate_sha="def",
        backend="triton-cuda",
        regime="graph",
        stage=Stage.CORRECTNESS,
        passed=False,
        reason="wrong result on n8",
        cases=(wrong,),
        hacks=(HackFinding("output_caching", "the second call returned the first call's tensor"),),
        logs="compiling...\n" + "x" * 5000 + "\nRuntimeError: LOG-TAIL-MARK",
    )


def program(pid: str, result: EvalResult | None, source: str = SOURCE) -> Program:
    return Program(pid, source, pid, None, "seed:file", 0, 0, result=result)


def test_templates_are_files_shipped_with_the_package():
    names = {p.name for p in PROMPTS_DIR.glob("*.j2")}
    assert {
        "system.j2",
        "mutation.j2",
        "feedback.j2",
        "format_diff.j2",
        "format_rewrite.j2",
        "seed.j2",
    } <= names


def test_prompt_holds_task_hardware_reference_parent_and_timing_feedback(tmp_path):
    task = load_task(write_task(tmp_path / "task"))
    prompt = render_prompt(task, program("p", timed_result()), hardware=H200, mode="diff")
    user = prompt.user
    assert "# Task: tiny_scale" in user and "Doubles a vector." in user and "n4096: n=4096" in user
    assert "NVIDIA H200, 132 SMs, memory bandwidth 4800 GB/s" in user
    assert "Triton 3.6.0" in user and "PyTorch 2.11.0" in user
    assert "REFERENCE-MARK" in user
    assert SOURCE.strip() in user
    # Per-case speedups in both regimes, with CIs; the scored regime is marked, a non-real speedup flagged.
    assert "graph (scored): 1.6x (95% CI 1.52-1.68)" in user
    assert "wall: 1.05x (95% CI 0.97-1.12, not a real speedup)" in user
    assert "reference 10.00 us, candidate 6.25 us" in user
    assert "<<<<<<< SEARCH" in user and "```python code block" not in user
    assert "EVOLVE-BLOCK" in prompt.system and "@triton.jit" in prompt.system
    assert prompt.messages()[0]["role"] == "system" and prompt.messages()[1]["content"] == user


def test_prompt_of_a_failing_parent_shows_mismatch_hacks_and_log_tail(tmp_path):
    task = load_task(write_task(tmp_path / "task"))
    user = render_prompt(task, program("p", failing_result()), mode="rewrite").user
    assert "failed at the correctness stage: wrong result on n8" in user
    assert "n8 [n=8]: WRONG; max abs error 4.00e+00" in user
    assert "return differs at [5]: expected 4, got 0 (tail element never written)" in user
    assert "class 7 output_caching" in user and "the second call returned the first call's tensor" in user
    assert "LOG-TAIL-MARK" in user and "[...]" in user and "x" * 2500 not in user
    assert "fix what the feedback points at first" in user
    assert "single ```python code block" in user and "<<<<<<< SEARCH" not in user
    assert "GPU: unknown" in user


def test_inspirations_appear_with_their_scores_and_blocks(tmp_path):
    task = load_task(write_task(tmp_path / "task"))
    other = SOURCE.replace("x * 2", "x + x  # INSPIRATION-MARK")
    user = render_prompt(task, program("p", None), (program("i", timed_result(), other),)).user
    assert "Inspiration 1 (score 1.6): correct; 1.6x faster than the reference" in user
    assert (
        "INSPIRATION-MARK" in user
        and "import torch\n\n# EVOLVE-BLOCK-START" not in user.split("Inspiration 1")[1]
    )
    assert "Current program (score not evaluated)" in user


def test_no_secret_from_the_environment_reaches_the_prompt(tmp_path, monkeypatch):
    secret = "sk-test-NEVER-IN-PROMPTS-1234567890"
    monkeypatch.setenv("KERNELBOT_LLM_API_KEY", secret)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    task = load_task(write_task(tmp_path / "task"))
    prompt = render_prompt(task, program("p", failing_result()), (program("i", timed_result()),), H200)
    assert secret not in prompt.as_text()


def test_code_keeps_its_blank_lines_so_search_parts_can_quote_it(tmp_path):
    task = load_task(write_task(tmp_path / "task"))
    block = "A = 1\n\n\n\ndef scale(x):\n    return x * A\n"
    source = f"import torch\n\n# EVOLVE-BLOCK-START\n{block}# EVOLVE-BLOCK-END\n"
    user = render_prompt(task, program("p", None, source)).user
    assert "A = 1\n\n\n\ndef scale(x):" in user


def test_unknown_mode_is_refused(tmp_path):
    task = load_task(write_task(tmp_path / "task"))
    with pytest.raises(ValueError, match="prompt mode"):
        render_prompt(task, program("p", None), mode="poem")


def test_feedback_of_an_unevaluated_program():
    fb = build_feedback(None)
    assert not fb.evaluated and fb.verdict == "not evaluated yet" and not fb.failing


def test_feedback_gives_the_roofline_fraction_and_the_kernels_of_a_call(tmp_path):
    task = load_task(write_task(tmp_path / "task"))
    timed = timed_result()
    (case,) = timed.cases
    graph = replace(case.timings["graph"], floor_us=2.5)  # 2.5 us floor, 6.25 us measured: 40 %
    kernels = (KernelTime("_scale_kernel", 4.75), KernelTime("_tail_kernel", 1.25))
    case = replace(case, timings={**case.timings, "graph": graph}, kernels=kernels)
    result = replace(timed, cases=(case,))
    user = render_prompt(task, program("p", result), hardware=H200).user
    assert "graph (scored): 1.6x (95% CI 1.52-1.68)" in user
    assert "CV 1.1%; reaches 40% of the roofline (floor 2.50 us)" in user
    assert user.count("of the roofline") == 1  # the wall timing has no floor: nothing is made up
    launches = "kernels: 2 kernel launches, 6.00 us on the GPU: _scale_kernel 4.75 us, _tail_kernel 1.25 us"
    assert launches in user
    # A JSON round trip (worker -> pool -> store) keeps both.
    assert EvalResult.from_json(result.to_json()) == result
    many = tuple(KernelTime(f"_k{i}", 1.0) for i in range(11))
    fb = build_feedback(replace(result, cases=(replace(case, kernels=many),)))
    assert fb.cases[0].kernels.startswith("11 kernel launches, 11.00 us on the GPU: _k0 1.00 us")
    assert fb.cases[0].kernels.endswith("_k7 1.00 us, and 3 more")
    assert build_feedback(timed_result()).cases[0].kernels == ""  # none recorded (a CPU run): none shown
