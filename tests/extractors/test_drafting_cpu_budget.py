"""Drafts sized for the CPU they are tried on (extractors/drafting/cpu_budget.py): a reference whose cases
take too long on the CPU (LMDeploy's AWQ linear multiplies in float16, which the CPU does slowly) gets its
model widths halved until the largest serving case fits, and a fast one keeps the model's sizes. The searches
run a stand-in for the trial worker whose case times follow a matmul's cost, so no reference is run."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from extractors.drafting.assignment import Assignment
from extractors.drafting.cpu_budget import (
    CASE_SECONDS,
    Shrink,
    projected_shrink,
    scaled_widths,
    shrink_widths,
)
from extractors.drafting.gather_param_uses import gather_param_uses
from extractors.drafting.search import DraftSearch
from extractors.drafting.serving_shapes import load_profile
from extractors.drafting.solver import initial_assignment
from extractors.drafting.trials import TrialOutcome
from extractors.signature import entry_signature

LINEAR = """
import torch


def linear(x, weight):
    return torch.matmul(x.half(), weight.half())
"""


class CostedRunner:
    """Answers trials as the worker would for a reference that runs, each case taking `per_mac` seconds per
    multiply-add of a [tokens, hidden] x [hidden, hidden] matmul (work in the product of two widths)."""

    def __init__(self, per_mac: float, timeout: float = 1e9) -> None:
        self.per_mac = per_mac
        self.timeout = timeout
        self.largest_run: dict[str, Any] = {}

    def run(self, args, sizes, cases, full=(), repeat=()):  # type: ignore[no-untyped-def]
        out = []
        total = sum({**sizes, **c}.get("tokens", 1) * sizes["hidden"] ** 2 * self.per_mac for c in cases)
        if total > self.timeout:  # killed: no case answers, each is charged the whole time (TrialRunner)
            late = TrialOutcome(
                "", False, f"ran past {self.timeout:g}s", seconds=self.timeout, timed_out=True
            )
            return [replace(late, case=c["name"]) for c in cases]
        for case in cases:
            values = {**sizes, **case}
            seconds = values.get("tokens", 1) * values["hidden"] ** 2 * self.per_mac
            out.append(TrialOutcome(case["name"], True, lines=frozenset({6}), seconds=seconds))
            if case["name"].startswith("prefill"):
                self.largest_run = {**values, "seconds": seconds}
        return out


def _search(per_mac: float, timeout: float = 1e9):  # type: ignore[no-untyped-def]
    facts = gather_param_uses(LINEAR, "linear")
    profile = load_profile("lmdeploy")
    start = initial_assignment(entry_signature(LINEAR, "linear"), facts, {}, profile)
    runner = CostedRunner(per_mac, timeout)
    result = DraftSearch(runner, facts, profile).run(start)  # type: ignore[arg-type]
    return start, result, runner


def test_a_reference_too_slow_for_the_cpu_gets_its_widths_halved_until_the_largest_case_fits() -> None:
    # 37 tokens by 4096 x 4096 in about 20 s: a float16 matmul on a CPU without float16 units
    start, result, runner = _search(per_mac=20 / (37 * 4096 * 4096))
    assert not result.error
    base = result.variants[0].assignment
    assert start.sizes["hidden"] == 4096 and base.sizes["hidden"] < 4096
    assert base.sizes["hidden"] >= 128 and 4096 % base.sizes["hidden"] == 0  # a group size still divides
    assert base.scale == 4096 // base.sizes["hidden"]
    assert runner.largest_run["seconds"] <= CASE_SECONDS  # the prefill case last run, at the final sizes
    assert runner.largest_run["hidden"] == base.sizes["hidden"]
    assert any("CPU-sized: hidden 4096 ->" in line for line in result.log), result.log


def test_a_trial_that_runs_past_its_time_is_tried_again_smaller() -> None:
    # the probe alone (37 tokens) takes 300 s at full width, past a 120 s limit: no error to repair from
    _, result, runner = _search(per_mac=300 / (37 * 4096 * 4096), timeout=120)
    assert not result.error, result.error
    assert runner.largest_run["seconds"] <= CASE_SECONDS
    assert result.log[0].startswith("probe took 120 s on this CPU"), result.log


def test_a_reference_the_cpu_runs_quickly_keeps_the_model_sizes() -> None:
    start, result, _ = _search(per_mac=1e-12)
    base = result.variants[0].assignment
    assert base.sizes == start.sizes and base.scale == 1
    assert not any("CPU-sized" in line for line in result.log)


def test_the_projection_starts_from_the_case_nearest_the_largest() -> None:
    profile = load_profile("lmdeploy")  # largest: 1024 tokens
    cases = [{"name": "probe", "tokens": 37, "batch": 11}, {"name": "decode1", "tokens": 1}]
    cases.append({"name": "prefill1024", "tokens": 1024})
    fixed_cost = [TrialOutcome(c["name"], True, seconds=0.5) for c in cases]
    # half a second whatever the tokens: fixed costs, not work that grows 1024-fold
    assert projected_shrink(fixed_cost, cases, profile, {"tokens"}) is None
    slow_probe = projected_shrink(
        [TrialOutcome("probe", False, "x", seconds=30.0)], cases[:1], profile, {"tokens"}
    )
    assert slow_probe is not None and slow_probe.projected == 30.0 * 1024 / 37 and slow_probe.halvings == 3
    # a case that uses no token count is not scaled by one
    assert projected_shrink([TrialOutcome("probe", True, seconds=5.0)], cases[:1], profile, set()) is None


def test_widths_stop_at_the_floor_and_other_models_follow_the_same_division() -> None:
    start = Assignment({}, {"hidden": 4096, "intermediate": 12288, "num_experts": 128, "tokens": 37})
    shrunk = shrink_widths(start, Shrink(halvings=10, seconds=60.0, case="probe", projected=1e4))
    assert shrunk is not None
    smaller, why = shrunk
    # 12288 / 64 = 192, whose half is under 128; counts (experts) and token counts are never halved
    assert smaller.sizes == {"hidden": 128, "intermediate": 192, "num_experts": 128, "tokens": 37}
    assert "hidden 4096 -> 128, intermediate 12288 -> 192" in why and smaller.scale == 64
    assert shrink_widths(smaller, Shrink(1, 60.0, "probe", 1e4)) is None  # nothing left to halve
    assert scaled_widths({"hidden": 7168, "intermediate": 18432, "num_experts": 256}, 8) == {
        "hidden": 896,
        "intermediate": 2304,
        "num_experts": 256,
    }
