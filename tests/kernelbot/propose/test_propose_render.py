"""Rendering each PR template from Evidence: every number shown is in evidence.json, a speed is claimed
only where the lower bound a claim may state is above 1 (the interval's lower end less the cross-process
margin, or the interval's lower end where the evaluator gave no such bound), and an interpreter run says no
speed was measured."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from proposal_fixtures import ProfileStandIn, evidence_for, unexplained_numbers, verify_content

from kernelbot.errors import ConfigError
from kernelbot.forge import parse_marker
from kernelbot.propose import Evidence, body_templates, render_body
from kernelbot.propose.collect import e2e_evidence
from kernelbot.propose.render import marker_of

HEADINGS = {
    "sglang": ["Motivation", "Modifications", "Accuracy Tests", "Benchmarking and Profiling", "Checklist"],
    "lmdeploy": ["Motivation", "Modification", "BC-breaking (Optional)", "Use cases (Optional)", "Checklist"],
    "example": ["Why", "What changes", "Correctness", "Speed", "Environment", "Reproduce"],
}
STEPS = ("Ask a maintainer to add the run-ci label", "Sign the CLA")


def _evidence(tmp_path: Path, gpu: bool) -> Evidence:
    return evidence_for(tmp_path, gpu=gpu, profile=ProfileStandIn(human_steps=STEPS))


def test_every_profile_template_is_there() -> None:
    assert body_templates() == ["example", "lmdeploy", "sglang"]


@pytest.mark.parametrize("template", sorted(HEADINGS))
@pytest.mark.parametrize("gpu", [True, False], ids=["gpu", "interpreter"])
def test_every_number_in_the_body_is_in_the_evidence(tmp_path: Path, template: str, gpu: bool) -> None:
    evidence = _evidence(tmp_path, gpu)
    body = render_body(evidence, template)
    assert unexplained_numbers(body, evidence.to_json()) == []
    headings = re.findall(r"^## (.+)$", body, re.MULTILINE)
    assert headings[: len(HEADINGS[template])] == HEADINGS[template]
    assert parse_marker(body) == marker_of(evidence)
    assert body.rstrip().endswith(marker_of(evidence).render())
    for step in STEPS:
        assert f"- [ ] {step}" in body
    assert "\n\n\n" not in body and body.endswith("\n")


def test_the_number_check_catches_an_invented_number(gpu_evidence: Evidence) -> None:
    body = render_body(gpu_evidence, "sglang")
    assert unexplained_numbers(body + "\nIt is 7.77× faster.\n", gpu_evidence.to_json()) == ["7.77"]


@pytest.mark.parametrize("template", sorted(HEADINGS))
def test_an_interpreter_run_claims_no_speed(cpu_evidence: Evidence, template: str) -> None:
    body = render_body(cpu_evidence, template)
    reason = "this run used Triton's interpreter on cpu, which checks correctness only"
    assert f"**No speed was measured**: {reason}. This PR makes no performance claim." in body
    assert "faster" not in body.replace("faster only when", "")
    assert "×" not in body and "µs" not in body
    assert "End-to-end: not measured (no GPU on this machine" in body
    # Correctness is still reported in full, skipped cases with their reason.
    assert "| t1_d2048_bf16 | tokens=1, d=2048, dtype=bfloat16 | bfloat16 | 6.6e-02 |" in body
    assert "skipped: 7340032 input elements > interpret_max_numel 2097152" in body
    assert "- [x] Kernel benchmark" not in body


def test_claims_follow_the_lower_bound_of_each_interval(gpu_evidence: Evidence) -> None:
    body = render_body(gpu_evidence, "sglang")
    rows = [line for line in body.splitlines() if line.startswith("| t1_d2048") or line.startswith("| t16_")]
    bench = {tuple(cell.strip() for cell in row.split("|")[1:4:2]): row for row in rows if "µs" not in row}
    graph_fast = next(r for r in rows if "| graph |" in r and r.startswith("| t1_d2048"))
    assert "| 1.40× | [1.33, 1.45] | ≥ 1.328× |" in graph_fast and graph_fast.rstrip(" |").endswith("faster")
    wall_straddling = next(r for r in rows if "| wall |" in r and r.startswith("| t1_d2048"))
    assert "| 1.02× | [0.97, 1.06] | ≥ 0.964× |" in wall_straddling
    assert wall_straddling.rstrip(" |").endswith("no claim")
    # Above 1 by its interval, not by the bound a claim may state once a fresh process's margin is taken off.
    wall_margin = next(r for r in rows if "| wall |" in r and r.startswith("| t16_"))
    assert "| 1.02× | [1.01, 1.05] | ≥ 0.995× |" in wall_margin and wall_margin.rstrip(" |").endswith(
        "no claim"
    )
    # Too few pairs for the margin: the interval's lower end is the bound.
    hidden = next(
        line for line in body.splitlines() if line.startswith("| hidden1 |") and "| graph |" in line
    )
    assert "| 1.40× | [1.35, 1.46] | ≥ 1.351× |" in hidden and hidden.rstrip(" |").endswith("faster")
    assert bench  # the accuracy rows are there too
    cases = gpu_evidence.microbenchmarks.cases
    claimed = [t for c in cases for t in (c.graph, c.wall) if t is not None and t.claimed]
    assert body.count("| faster |") == len(claimed) == 2
    assert (
        "Over all cases (graph regime, geometric mean): **1.27×**, 95 % CI [1.18, 1.34]; at least **1.180×** "
        "may be claimed." in body
    )
    # The tools that ran, as the integration recorded them.
    assert "- [x] Formatted with isort 5.13.2, black 24.8.0 (as .pre-commit-config.yaml pins them)." in body
    assert "Change: +4.0 %, 95 % CI [+3.6 %, +4.4 %]." in body
    assert "The interval lies entirely on the better side." in body
    assert (
        "already failing before the change (not caused by it): `tests/test_layers.py::test_rope_cache`"
        in body
    )


def test_an_e2e_change_inside_the_noise_is_not_claimed(tmp_path: Path) -> None:
    body = render_body(evidence_for(tmp_path, gpu=True, claimed=False), "lmdeploy")
    assert "Change: +0.1 %, 95 % CI [-0.3 %, +0.6 %]." in body
    assert "no end-to-end improvement is claimed" in body
    assert "lies entirely on the better side" not in body


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_an_e2e_regression_is_said_plainly(tmp_path: Path, higher_is_better: bool) -> None:
    worse = (-4.1, -2.3) if higher_is_better else (2.3, 4.1)  # the interval wholly on the worse side
    e2e = verify_content(e2e_measured=True, claimed=False)["e2e"]
    e2e.update(higher_is_better=higher_is_better, delta_pct=sum(worse) / 2, ci_pct=list(worse))
    regression = e2e_evidence(e2e)
    assert regression.regressed and not regression.claimed
    evidence = dataclasses.replace(evidence_for(tmp_path, gpu=True, claimed=False), e2e=regression)
    body = render_body(evidence, "sglang")
    assert "on this benchmark the engine is slower with this change" in body
    assert "lies entirely on the better side" not in body and "no end-to-end improvement" not in body

    inside = e2e_evidence(verify_content(e2e_measured=True, claimed=False)["e2e"])
    assert not inside.regressed and not inside.claimed  # [-0.3 %, +0.6 %]: neither


def test_an_unknown_template_lists_the_known_ones(gpu_evidence: Evidence) -> None:
    with pytest.raises(
        ConfigError, match="no PR template 'vllm': pr_templates/ has example, lmdeploy, sglang"
    ):
        render_body(gpu_evidence, "vllm")
