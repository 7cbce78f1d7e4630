"""The evaluator settings of a confirmation process: the search's, with the claim's regimes timed in full
(the wall regime's longer cap, the other regime sampled like the scored one), the baseline swapped, the lock
left to the caller; and where nothing is timed, the cheapest re-check that still runs the plumbing."""

from __future__ import annotations

from pathlib import Path

from evaluators.config import EvalConfig, TimingConfig
from kernelbot.confirm.run import CONFIRM_WALL_TIME_CAP_S, confirmation_config, current_path_of


def test_a_confirmation_times_both_regimes_as_a_claim_needs() -> None:
    search = EvalConfig(timing=TimingConfig(time_cap_s=0.1, secondary_time_cap_s=0.01, wall_time_cap_s=0.06))
    config = confirmation_config(search, "call:pkg.ops:f", caller_holds_gpu=True)
    t = config.timing
    assert t.baseline == "call:pkg.ops:f" and t.caller_holds_gpu
    assert t.wall_time_cap_s == CONFIRM_WALL_TIME_CAP_S > search.timing.wall_time_cap_s
    assert t.secondary_time_cap_s == 0.1 and t.secondary_min_samples == t.min_samples
    assert (config.seeds_per_case, config.hidden_cases, config.drift_calls) == (1, 0, search.drift_calls)
    # The search's evaluator settings themselves are not changed by it.
    assert search.timing.baseline == "eager" and search.timing.wall_time_cap_s == 0.06


def test_without_timing_only_the_plumbing_runs() -> None:
    config = confirmation_config(EvalConfig(), "compile", caller_holds_gpu=False, timed=False)
    assert config.drift_calls == 0 and config.interpret_budget_s == 0.0 and not config.timing.caller_holds_gpu


def test_the_current_path_is_named_by_the_task(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text('name = "t"\ncurrent_path = "sgl_kernel:silu_and_mul"\n')
    assert current_path_of(tmp_path) == "sgl_kernel:silu_and_mul"
    (tmp_path / "task.toml").write_text('name = "t"\n')
    assert current_path_of(tmp_path) is None
    assert current_path_of(tmp_path / "missing") is None
