"""The EvalResult contract: frozen, JSON round-trip, hack classes."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from evaluators.result import (
    HACK_CLASSES,
    CaseResult,
    EvalResult,
    HackFinding,
    Hardware,
    Mismatch,
    RegimeTiming,
    Stage,
    TimingStats,
    failure,
)


def full_result() -> EvalResult:
    timing = RegimeTiming(
        reference=TimingStats(median_us=10.0, cv=0.002, samples=50, outliers=3),
        candidate=TimingStats(median_us=5.0, cv=0.001, samples=48),
        speedup=2.0,
        ci_low=1.9,
        ci_high=2.1,
    )
    case = CaseResult(
        name="b64",
        params={"batch": 64, "dtype": "bfloat16"},
        passed=False,
        max_abs_error=0.5,
        max_rel_error=float("inf"),
        mismatch=Mismatch(output="return[1]", index=(3, 7), expected=1.0, actual=float("-inf"), detail="x"),
        timings={"graph": timing, "wall": timing},
        hidden=True,
    )
    return EvalResult(
        task="t",
        candidate_sha="abc",
        backend="triton-cuda",
        regime="graph",
        stage=Stage.TIMING,
        passed=False,
        reason="flagged",
        correct=True,
        score=0.0,
        speedup=2.0,
        speedup_ci=(1.9, 2.1),
        cases=(case, CaseResult(name="skip", params={}, passed=False, skipped="too big")),
        hacks=(
            HackFinding("drift", "call 7 differs", detector="runtime"),
            HackFinding("sandbox_escape", "open"),
        ),
        hardware=Hardware(
            backend="triton-cuda", device="NVIDIA H200", sm_count=132, memory_bandwidth_gbps=4800.0
        ),
        quarantined=True,
        logs="tail",
        duration_s=1.5,
        reference_precision="native",
    )


def test_json_round_trip_restores_every_type() -> None:
    original = full_result()
    text = original.to_json(indent=2)
    restored = EvalResult.from_json(text)
    assert restored == original
    assert isinstance(restored.stage, Stage) and isinstance(restored.speedup_ci, tuple)
    assert isinstance(restored.cases[0].mismatch.index, tuple)
    assert isinstance(restored.cases[0].timings["graph"].reference, TimingStats)
    assert restored.hacks[0].number == 8
    assert json.loads(text)["stage"] == "timing"  # plain JSON for other tools


def test_nan_survives_the_round_trip() -> None:
    case = CaseResult("c", {}, False, mismatch=Mismatch("return", (0,), 1.0, float("nan")))
    result = failure("t", "sha", "triton-cuda", "graph", Stage.CORRECTNESS, "wrong", cases=(case,))
    restored = EvalResult.from_json(result.to_json())
    assert math.isnan(restored.cases[0].mismatch.actual)


def test_round_trip_of_a_minimal_failure() -> None:
    result = failure("t", "sha", "triton-interpret", "wall", Stage.COMPILE, "syntax error")
    assert not result.passed and result.score == 0.0 and result.stage is Stage.COMPILE
    assert EvalResult.from_json(result.to_json()) == result


def test_results_are_frozen_and_updated_by_copy() -> None:
    result = full_result()
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.score = 1.0  # type: ignore[misc]
    assert result.with_updates(score=3.0).score == 3.0 and result.score == 0.0


def test_hack_classes_are_numbered_one_to_nineteen() -> None:
    assert sorted(number for number, _ in HACK_CLASSES.values()) == list(range(1, 20))
    assert HackFinding("beyond_roofline", "x").number == 15
    with pytest.raises(ValueError, match="unknown hack class"):
        HackFinding("made_up", "x")


def test_redacted_masks_every_text_a_candidate_reaches_and_nothing_else() -> None:
    secret = "tok-0123456789"
    result = full_result()
    case = dataclasses.replace(
        result.cases[0], mismatch=dataclasses.replace(result.cases[0].mismatch, detail=secret)
    )
    leaky = result.with_updates(
        reason=f"r {secret}",
        logs=f"l {secret}",
        hacks=(HackFinding("sandbox_escape", f"read {secret}"),),
        cases=(case, dataclasses.replace(result.cases[1], skipped=secret)),
    )
    masked = leaky.redacted(lambda text: text.replace(secret, "***"))
    assert secret not in masked.to_json() and secret in leaky.to_json()
    assert masked.reason == "r ***" and masked.hacks[0].evidence == "read ***"
    assert masked.with_updates(reason=leaky.reason, logs=leaky.logs).cases[1].skipped == "***"
    assert masked.score == leaky.score and masked.cases[0].timings == leaky.cases[0].timings


def test_a_real_speedup_needs_its_ci_above_one() -> None:
    stats = TimingStats(1.0, 0.0, 10)
    assert RegimeTiming(stats, stats, 1.2, 1.01, 1.3).real
    assert not RegimeTiming(stats, stats, 1.2, 0.99, 1.3).real
