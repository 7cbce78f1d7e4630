"""The evaluator settings of a confirmation process: the search's, with the claim's regimes timed in full
(the wall regime's longer cap, the other regime sampled like the scored one), the baseline swapped, the lock
left to the caller; and where nothing is timed, the cheapest re-check that still runs the plumbing."""

from __future__ import annotations

from pathlib import Path

from evaluators.config import EvalConfig, TimingConfig
from kernelbot.confirm.report import CellReport, ColumnReport, ConfirmReport
from kernelbot.confirm.run import (
    CONFIRM_TIME_CAP_S,
    CONFIRM_WALL_TIME_CAP_S,
    confirmation_config,
    current_path_of,
)
from kernelbot.target.run_dir import read_confirm, write_confirm


def test_a_confirmation_times_both_regimes_as_a_claim_needs() -> None:
    search = EvalConfig()  # the search's defaults: short looks, for its pace
    config = confirmation_config(search, "call:pkg.ops:f", caller_holds_gpu=True)
    t = config.timing
    assert t.baseline == "call:pkg.ops:f" and t.caller_holds_gpu
    assert t.wall_time_cap_s == CONFIRM_WALL_TIME_CAP_S > search.timing.wall_time_cap_s
    assert t.time_cap_s == CONFIRM_TIME_CAP_S > search.timing.time_cap_s
    assert t.secondary_time_cap_s == CONFIRM_TIME_CAP_S and t.secondary_min_samples == t.min_samples
    assert (config.seeds_per_case, config.hidden_cases, config.drift_calls) == (1, 0, search.drift_calls)
    assert search.degenerate_check and not config.degenerate_check  # the search judged the task already
    # The search's evaluator settings themselves are not changed by it.
    assert search.timing.baseline == "eager" and search.timing.wall_time_cap_s == 0.06
    # A search that already samples longer keeps its looks.
    long = EvalConfig(timing=TimingConfig(time_cap_s=0.5, wall_time_cap_s=0.5))
    assert confirmation_config(long, "eager", caller_holds_gpu=True).timing.time_cap_s == 0.5


def test_without_timing_only_the_plumbing_runs() -> None:
    config = confirmation_config(EvalConfig(), "compile", caller_holds_gpu=False, timed=False)
    assert config.drift_calls == 0 and config.interpret_budget_s == 0.0 and not config.timing.caller_holds_gpu


def test_the_current_path_is_named_by_the_task(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text('name = "t"\ncurrent_path = "sgl_kernel:silu_and_mul"\n')
    assert current_path_of(tmp_path) == "sgl_kernel:silu_and_mul"
    (tmp_path / "task.toml").write_text('name = "t"\n')
    assert current_path_of(tmp_path) is None
    assert current_path_of(tmp_path / "missing") is None


def test_a_function_the_engine_compiles_has_its_kernel_timed_compiled() -> None:
    """The compile column of a function run under torch.compile times the kernel under torch.compile too;
    the other columns, and every column of other functions, time it as it is."""
    compiled = confirmation_config(EvalConfig(), "compile", caller_holds_gpu=True, compile_candidate=True)
    assert compiled.timing.compile_candidate and compiled.timing.baseline == "compile"
    plain = confirmation_config(EvalConfig(), "compile", caller_holds_gpu=True)
    assert not plain.timing.compile_candidate and not EvalConfig().timing.compile_candidate


def _report(*, measured: bool, kernel_compiled: bool, cells: int) -> ConfirmReport:
    cell = CellReport("t1", {"tokens": 1}, "graph", (1.2,), 1.2, 1.1, 1.3, 0.01, "faster", 10.0, 8.3)
    compile_column = ColumnReport("compile", "compile", "torch.compile", True, cells=(cell,) * cells)
    return ConfirmReport(
        measured=measured,
        reason="" if measured else "not measured on this machine (CPU interpreter)",
        backend="triton-cuda" if measured else "triton-interpret",
        device="NVIDIA H200",
        kernel_sha="k",
        regimes=("graph",),
        rule={},
        columns=(compile_column,),
        extra={"kernel_compiled": True} if kernel_compiled else {},
    )


def test_measured_compiled_needs_compiled_figures_on_a_timing_device(tmp_path: Path) -> None:
    assert _report(measured=True, kernel_compiled=True, cells=1).measured_compiled
    assert not _report(measured=False, kernel_compiled=True, cells=0).measured_compiled  # the interpreter
    assert not _report(measured=True, kernel_compiled=False, cells=1).measured_compiled  # timed as it is
    assert not _report(measured=True, kernel_compiled=True, cells=0).measured_compiled  # no figures
    report = _report(measured=True, kernel_compiled=True, cells=1)
    write_confirm(tmp_path, report)
    again = read_confirm(tmp_path)
    assert again.measured_compiled and again == report
