"""Which cases run where: every case in order on a GPU; on the interpreter, small ones first, oversized ones
skipped with the reason, and no new case started once its projected time would overrun the budget."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from evaluators.case_plan import plan_cases
from evaluators.config import EvalConfig
from evaluators.task import load_task

TOML = """
name = "vec"
entry = "f"
[[cases]]
name = "big"
n = 5000
[[cases]]
name = "small"
n = 10
[[cases]]
name = "mid"
n = 1000
[[cases]]
name = "huge"
n = 100000
"""


def make_task(tmp_path: Path):
    (tmp_path / "task.toml").write_text(TOML)
    (tmp_path / "reference.py").write_text("def f(x):\n    return x * 2\n")
    (tmp_path / "inputs.py").write_text(
        "import torch\n\ndef make_inputs(case, seed, device):\n"
        "    return (torch.ones(case['n'], device=device),), {}\n"
    )
    return load_task(tmp_path)


def interpreter(can_time: bool = False):
    return SimpleNamespace(can_time=can_time, device="cpu")


def test_a_gpu_runs_every_case_in_task_order(tmp_path: Path) -> None:
    plan = plan_cases(make_task(tmp_path), interpreter(can_time=True), EvalConfig(), seed=1)
    assert [c.name for c in plan.runnable] == ["big", "small", "mid", "huge"]
    assert not plan.skipped and not plan.should_skip(plan.runnable[0], any_passed=True)


def test_the_interpreter_runs_small_cases_first_and_skips_oversized_ones(tmp_path: Path) -> None:
    config = EvalConfig(interpret_max_numel=10_000)
    plan = plan_cases(make_task(tmp_path), interpreter(), config, seed=1)
    assert [c.name for c in plan.runnable] == ["small", "mid", "big"]
    assert [r.name for r in plan.skipped] == ["huge"]
    assert "100000 input elements > interpret_max_numel 10000" in plan.skipped[0].skipped


def test_a_case_projected_past_the_budget_is_not_started(tmp_path: Path) -> None:
    plan = plan_cases(
        make_task(tmp_path),
        interpreter(),
        EvalConfig(interpret_budget_s=1.0, interpret_max_numel=10_000),
        seed=1,
    )
    small, mid, big = plan.runnable
    assert not plan.should_skip(small, any_passed=False)  # the first case always runs
    plan.record(small, 0.05)  # 5 ms per element: mid (1000 elements) would need 5 s
    assert plan.should_skip(mid, any_passed=True)
    assert not plan.should_skip(mid, any_passed=False)  # nothing passed yet: keep trying
    results = plan.skip_rest([mid, big])
    assert [r.name for r in results] == ["mid", "big"] and all("budget" in r.skipped for r in results)


def test_a_cheap_case_still_fits(tmp_path: Path) -> None:
    plan = plan_cases(
        make_task(tmp_path),
        interpreter(),
        EvalConfig(interpret_budget_s=60.0, interpret_max_numel=10_000),
        seed=1,
    )
    small, mid, _ = plan.runnable
    plan.record(small, 0.001)
    time.sleep(0.01)
    assert not plan.should_skip(mid, any_passed=True)
