"""evaluators.scoring.aggregate: geometric mean with CI, score rules and the class-14 check."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evaluators.result import CaseResult, HackFinding, Hardware, RegimeTiming, TimingStats
from evaluators.scoring import aggregate, single_case_finding
from evaluators.task import Case, Task

GPU = Hardware(backend="triton-cuda", device="NVIDIA H200")
CPU = Hardware(backend="triton-interpret", device="cpu")


def _task(regime: str = "graph") -> Task:
    return Task(root=Path("/nonexistent"), name="t", entry="f", regime=regime, cases=(Case("a", {}),))


def _timing(speedup: float, half: float = 0.01) -> RegimeTiming:
    stats = TimingStats(median_us=10.0, cv=0.001, samples=30)
    return RegimeTiming(stats, stats, speedup, speedup * (1 - half), speedup * (1 + half))


def _case(
    name: str, graph: float | None = None, wall: float | None = None, passed: bool = True
) -> CaseResult:
    timings = {}
    if graph is not None:
        timings["graph"] = _timing(graph)
    if wall is not None:
        timings["wall"] = _timing(wall)
    return CaseResult(name=name, params={}, passed=passed, timings=timings)


def test_geometric_mean_in_the_task_regime():
    agg = aggregate(_task("graph"), [_case("a", 2.0, 9.0), _case("b", 8.0, 9.0)], GPU)
    assert agg.speedup == pytest.approx(4.0)
    assert agg.score == pytest.approx(4.0)
    assert agg.ci[0] < 4.0 < agg.ci[1]
    assert agg.real and not agg.findings
    wall = aggregate(_task("wall"), [_case("a", 2.0, 9.0), _case("b", 8.0, 9.0)], GPU)
    assert wall.speedup == pytest.approx(9.0)


def test_ci_narrows_with_more_cases():
    two = aggregate(_task(), [_case(str(i), 1.5) for i in range(2)], GPU)
    eight = aggregate(_task(), [_case(str(i), 1.5) for i in range(8)], GPU)
    assert eight.ci[1] - eight.ci[0] < two.ci[1] - two.ci[0]


def test_incorrect_or_flagged_candidates_score_zero():
    failed = aggregate(_task(), [_case("a", 2.0), _case("b", passed=False)], GPU)
    assert failed.score == 0.0
    prior = [HackFinding("output_caching", "same tensor returned twice")]
    flagged = aggregate(_task(), [_case("a", 2.0), _case("b", 2.0)], GPU, prior_findings=prior)
    assert flagged.score == 0.0 and flagged.speedup == pytest.approx(2.0)
    assert aggregate(_task(), [], GPU).score == 0.0


def test_nothing_timed_scores_one_for_a_correct_candidate():
    agg = aggregate(_task(), [_case("a"), _case("b")], CPU)
    assert agg.score == 1.0 and agg.speedup is None and agg.ci is None
    assert any("nothing was timed" in n for n in agg.notes)
    assert aggregate(_task(), [_case("a"), _case("b", passed=False)], CPU).score == 0.0


def test_missing_task_regime_falls_back_to_the_other_with_a_note():
    agg = aggregate(_task("graph"), [_case("a", graph=2.0), _case("b", wall=2.0)], GPU)
    assert agg.speedup == pytest.approx(2.0)
    assert any("case 'b' has no graph timing" in n for n in agg.notes)


def test_one_case_driving_the_aggregate_is_class_14():
    cases = [_case("huge", 20.0), _case("b", 0.9), _case("c", 0.85), _case("d", 0.9)]
    agg = aggregate(_task(), cases, GPU)
    assert agg.speedup > 1.0
    assert [f.kind for f in agg.findings] == ["single_case_aggregate"]
    assert agg.findings[0].number == 14
    assert "huge: 20.000x" in agg.findings[0].evidence and "b: 0.900x" in agg.findings[0].evidence
    assert agg.score == 0.0


def test_against_another_baseline_one_clear_win_is_no_class_14():
    # Timed against torch.compile (a confirmation column): even with the rest of the cases, one case's win
    # carries the aggregate; that is what a kernel at parity elsewhere shows, not a gamed score.
    cases = [_case("t256", 1.418), _case("a", 0.977), _case("b", 0.951), _case("c", 1.002), _case("d", 1.002)]
    assert [f.kind for f in aggregate(_task(), cases, GPU).findings] == ["single_case_aggregate"]
    agg = aggregate(_task(), cases, GPU, single_case_check=False)
    assert not agg.findings and agg.score == agg.speedup > 1.0


def test_broad_speedups_and_noise_are_not_class_14():
    broad = aggregate(_task(), [_case("a", 3.0), _case("b", 1.2), _case("c", 1.1)], GPU)
    assert not broad.findings and broad.score > 1.0
    # Near-1 noise: the full aggregate's CI does not clear 1, so nothing "drives" it.
    noise = [_case("a", 1.003), _case("b", 0.999), _case("c", 0.999)]
    assert not aggregate(_task(), noise, GPU).findings
    assert single_case_finding(["only"], [(5.0, 4.0, 6.0)]) is None


def test_non_finite_speedups_are_left_out():
    agg = aggregate(_task(), [_case("a", 2.0), _case("b", math.inf)], GPU)
    assert agg.speedup == pytest.approx(2.0)
    assert any("no finite speedup" in n for n in agg.notes)
