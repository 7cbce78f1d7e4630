"""kernelbot.integrate.review on small files: each check finds the defect it is named for and passes a file
without it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelbot.integrate.review import (
    coverage_problems,
    guard_name,
    guard_size_literals,
    long_lines,
    removed_lines,
)

TASK = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "silu_and_mul"

GUARD = """
def can_use_silu_and_mul_triton(x):
    return x.is_cuda and x.dim() == 2 and x.shape[-1] {op} and x.numel() < 2**31
"""


@pytest.mark.parametrize(("op", "found"), [("in (8192, 2048)", [2048]), ("% 2 == 0", [])])
def test_a_guard_that_pins_a_case_size_is_found(tmp_path: Path, op: str, found: list[int]) -> None:
    kernel = tmp_path / "kernel.py"
    kernel.write_text(GUARD.format(op=op))
    assert guard_name(kernel) == "can_use_silu_and_mul_triton"
    # 2048 is a case's d; 8192 is no case's size; 31 and 2 are below any size
    assert guard_size_literals(kernel, "can_use_silu_and_mul_triton", TASK) == found


TEST_FILE = """
import torch
DTYPES = [{dtypes}]
CASES = [
    {{"tokens": 1, "d": 2048}},  # task case t1
    {{"tokens": 1, "d": 14336}},  # llama-3-8b sizes (llama-3), tokens 1
]
GPU_CASES = [
    {{"tokens": 64, "d": 2048}},  # deepseek-v3 sizes (deepseek-v3), tokens 64
    {{"tokens": 1024, "d": 2048}},  # deepseek-v3 sizes (deepseek-v3), tokens 1024
]
"""


def test_the_generated_test_needs_two_checked_dtypes_four_shapes_two_families(tmp_path: Path) -> None:
    test = tmp_path / "test_k.py"
    test.write_text(TEST_FILE.format(dtypes="torch.bfloat16, torch.float16"))
    assert coverage_problems(test, {"bfloat16", "float16"}) == []
    unchecked = "test_k.py: dtypes ['float16'] that no task case checked"
    assert coverage_problems(test, {"bfloat16"}) == [unchecked]
    test.write_text(TEST_FILE.format(dtypes="torch.bfloat16").replace("(llama-3)", "(deepseek-v3)"))
    problems = coverage_problems(test, {"bfloat16"})
    assert len(problems) == 2 and "fewer than 2" in problems[0] and "families" in problems[1]


def test_long_lines_and_removed_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n" + "y = '" + "a" * 100 + "'\n")
    assert long_lines([path], 88) == ["m.py:2: 106 > 88"]
    patch = (
        "diff --git a/p/a.py b/p/a.py\n--- a/p/a.py\n+++ b/p/a.py\n@@ -1,2 +1,2 @@\n-old\n+new\n keep\n"
        "diff --git a/p/b.py b/p/b.py\n--- a/p/b.py\n+++ b/p/b.py\n@@ -1 +1,2 @@\n keep\n+added\n"
    )
    assert removed_lines(patch) == {"p/a.py": 1, "p/b.py": 0}


def test_the_kernel_module_keeps_the_candidates_comments_within_the_engines_limit() -> None:
    """A winner's comment longer than the engine's limit (an Inductor-seeded kernel's) is re-wrapped in the
    module integrate writes, since the engine's formatter wraps code only."""
    from kernelbot.integrate.envelope import Envelope
    from kernelbot.integrate.kernel_module import KernelNames, build_kernel_module
    from kernelbot.integrate.task_view import load_view

    view = load_view(TASK)
    source = sorted((TASK / "candidates").glob("*.py"))[0].read_text()
    long = "# " + "launch parameters " * 8
    source = source.replace("@triton.jit", f"{long}\n@triton.jit", 1)
    names = KernelNames("silu_and_mul_triton", "can_use_silu_and_mul_triton")
    # The guard plays no part here: the envelope of the task's cases (4096-token inputs built on the CPU,
    # ~10 s) is left out.
    envelope = Envelope("cuda", (), (), tuple(view.task.dynamic))
    module = build_kernel_module(source, view, envelope, names, summary="", line_length=88)
    comments = [line for line in module.splitlines() if line.lstrip().startswith("#")]
    assert "launch parameters launch" in " ".join(comments)
    assert max(len(line) for line in comments) <= 88


def test_the_kernel_module_of_a_nested_crossover_routes_from_one_table() -> None:
    """A winner three crossovers deep (the example's two SiLU kernels, one of them at two sizes of the
    route) ships one dispatcher and each kernel once; its file's docstring, written for one of the crossed
    candidates, is left out of the module's."""
    from evolution.mutators.crossover.source import Route, build_child
    from kernelbot.integrate.envelope import Envelope
    from kernelbot.integrate.kernel_module import KernelNames, build_kernel_module
    from kernelbot.integrate.task_view import load_view

    view = load_view(TASK)
    grid = (TASK / "candidates" / "silu_and_mul_triton.py").read_text()
    flat = (TASK / "candidates" / "silu_and_mul_flat_triton.py").read_text()
    entry = view.task.entry
    # Knob lines, as the fusion writer's candidates carry: the flattening reads them, the module drops them.
    grid, flat = (
        c.replace("# EVOLVE-BLOCK-START\n", "# EVOLVE-BLOCK-START\n# fusion-knobs: {}\n")
        for c in (grid, flat)
    )
    first = build_child(grid, flat, entry, Route(65536, True, ""))
    winner = build_child(first, flat, entry, Route(4096, True, ""))
    assert winner.count("# fusion-knobs: {}") == 3
    assert winner.count("def _silu_and_mul_flat_kernel") == 2 and winner.count("element_size()") == 2
    names = KernelNames("silu_and_mul_triton", "can_use_silu_and_mul_triton")
    envelope = Envelope("cuda", (), (), tuple(view.task.dynamic))
    module = build_kernel_module(winner, view, envelope, names, summary="", line_length=88)
    assert module.count("element_size()") == 1 and "CROSSOVER_BYTES" not in module
    assert "fusion-knobs" not in module
    for kernel in ("def _silu_and_mul_flat_kernel", "def _silu_and_mul_kernel"):
        assert module.count(kernel) == 1, kernel
    assert "def silu_and_mul_triton(" in module and "1-D grid of output elements" not in module
    # The constants a crossover suffixed for when they run are written in capitals whole (PEP 8).
    assert re.findall(r"^[A-Z][A-Z0-9_]*_[a-z]\w* = ", module, re.MULTILINE) == []
    assert re.search(r"^MEDIUM_WARPS_[A-Z]+ = 4$", module, re.MULTILINE)


def test_the_module_docstring_gives_the_cases_as_the_values_of_their_parameters() -> None:
    """`tokens 1, 64; hidden 4096, 7168` says what eight names like `tokens1_hidden4096` spell out; captured
    cases, which have no parameters, keep their names."""
    from evaluators.task import Case
    from kernelbot.integrate.kernel_module import _cases

    grid = tuple(
        Case(f"tokens{t}_hidden{h}", {"tokens": t, "hidden": h, "dtype": d})
        for t in (64, 1)
        for h in (7168, 4096)
        for d in ("bfloat16", "float16")
    )
    assert _cases(grid) == "8 cases (tokens 1, 64; hidden 4096, 7168; dtype bfloat16, float16)"
    assert _cases(grid[:1]) == "1 case (tokens 64; hidden 7168; dtype bfloat16)"
    captured = (Case("decode_step", {}, Path("captured/decode_step.pt")), grid[0])
    assert _cases(captured) == "the cases decode_step, tokens64_hidden7168"
