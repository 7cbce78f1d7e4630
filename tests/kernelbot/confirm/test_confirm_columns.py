"""How the confirmation reads its processes' verdicts, per column: each process adds one speedup per case and
regime, a column stays open until min_processes and until the stop rule decides every cell (or the cap), a
column whose callable cannot be built records why, and one whose processes keep failing is given up."""

from __future__ import annotations

from evaluators.result import CaseResult, EvalResult, Hardware, RegimeTiming, Stage, TimingStats
from evaluators.timing.baselines import UNAVAILABLE
from kernelbot.confirm.run import FAILURES_PER_COLUMN, _Column, _take
from kernelbot.confirm.stoprule import FASTER, NOT_SHOWN, StopRule

RULE = StopRule(min_processes=3, max_processes=5)


def timing(speedup: float, ref_us: float = 10.0) -> RegimeTiming:
    return RegimeTiming(
        reference=TimingStats(ref_us, 0.001, 50),
        candidate=TimingStats(ref_us / speedup, 0.001, 50),
        speedup=speedup,
        ci_low=speedup * 0.99,
        ci_high=speedup * 1.01,
    )


def verdict(graph: float, wall: float, *, passed: bool = True, reason: str = "correct") -> EvalResult:
    cases = ()
    if passed:
        cases = (
            CaseResult(
                "t1", {"tokens": 1}, True, timings={"graph": timing(graph), "wall": timing(wall, 20.0)}
            ),
            CaseResult("hidden", {"tokens": 3}, True, timings={"graph": timing(9.0)}, hidden=True),
        )
    return EvalResult(
        task="t",
        candidate_sha="s",
        backend="triton-cuda",
        regime="graph",
        stage=Stage.TIMING,
        passed=passed,
        reason=reason,
        cases=cases,
        hardware=Hardware(device="NVIDIA H200"),
    )


def test_a_column_stays_open_until_every_cell_is_decided() -> None:
    column = _Column("eager", "eager", "eager")
    failures: list[str] = []
    graph = [1.30, 1.31, 1.29, 1.30, 1.30]
    wall = [1.02, 0.97, 1.05, 0.99, 1.03]  # straddles 1: never decided
    for k in range(5):
        assert column.open(RULE)
        _take(column, verdict(graph[k], wall[k]), k + 1, failures)
    assert not column.open(RULE) and column.processes == 5 and not failures
    report = column.report(RULE)
    cells = {(c.case, c.regime): c for c in report.cells}
    assert set(cells) == {("t1", "graph"), ("t1", "wall")}  # hidden cases are not claims
    assert cells[("t1", "graph")].verdict == FASTER and cells[("t1", "wall")].verdict == NOT_SHOWN
    assert abs(cells[("t1", "graph")].baseline_us - 10.0) < 1e-9 and cells[("t1", "graph")].processes == 5
    assert report.available


def test_a_decided_column_closes_at_min_processes() -> None:
    column = _Column("compile", "compile", "compile")
    for k in range(3):
        _take(column, verdict(1.30, 1.30), k + 1, [])
    assert not column.open(RULE) and column.processes == 3


def test_an_unavailable_baseline_and_failing_processes_close_the_column() -> None:
    current = _Column("current", "call:pkg:f", "current")
    _take(current, verdict(0, 0, passed=False, reason=f"{UNAVAILABLE}: cannot import pkg: nope"), 1, [])
    assert not current.open(RULE) and current.reason == "cannot import pkg: nope"
    assert not current.report(RULE).available

    flaky = _Column("eager", "eager", "eager")
    failures: list[str] = []
    for k in range(FAILURES_PER_COLUMN):
        assert flaky.open(RULE)
        _take(flaky, verdict(0, 0, passed=False, reason="timing failed: CUDA error"), k + 1, failures)
    assert not flaky.open(RULE) and len(failures) == FAILURES_PER_COLUMN
    assert "in a row failed: timing failed: CUDA error" in flaky.reason
