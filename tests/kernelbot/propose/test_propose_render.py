"""Rendering each PR template from Evidence: every number shown is in evidence.json, a speed is claimed
only where the confirmation's bound over fresh processes is above 1 (per baseline column: eager,
torch.compile, the engine's current path), the search's own figures never appear, and an interpreter run
says no speed was measured."""

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
    said = "**No speed was measured**: not measured on this machine (CPU interpreter). This PR makes no"
    assert said in body
    assert "- current path (the engine's current path): not measured: cannot import sgl_kernel" in body
    assert "faster" not in body.replace("faster only when", "")
    assert "×" not in body and "µs" not in body
    assert "End-to-end: not measured (no GPU on this machine" in body
    # Correctness is still reported in full, skipped cases with their reason.
    assert "| t1_d2048_bf16 | tokens=1, d=2048, dtype=bfloat16 | bfloat16 | 6.6e-02 |" in body
    assert "skipped: 7340032 input elements > interpret_max_numel 2097152" in body
    assert "- [x] Kernel benchmark" not in body


def test_claims_follow_the_bound_over_fresh_processes(gpu_evidence: Evidence) -> None:
    body = render_body(gpu_evidence, "sglang")
    rows = [
        line for line in body.splitlines() if line.startswith(("| t1_d2048", "| t16_")) and "µs" not in line
    ]
    bench = [r for r in rows if "| eager |" in r or "| torch.compile |" in r]
    mb = gpu_evidence.microbenchmarks
    eager = mb.cases[0].figures[0]
    graph_fast = next(r for r in bench if "| graph | eager |" in r and r.startswith("| t1_d2048"))
    assert (
        f"| 5.6 | {eager.kernel_us:.1f} | 1.40× | ≥ {eager.bound:.3f}× | 3 | {eager.cv_pct:.1f} % | faster |"
        in (graph_fast)
    )
    wall = next(r for r in bench if "| wall | eager |" in r and r.startswith("| t1_d2048"))
    assert wall.rstrip(" |").endswith("no claim")
    not_faster = next(r for r in bench if "| graph | torch.compile |" in r and r.startswith("| t16_"))
    assert "| 0.95× |" in not_faster and not_faster.rstrip(" |").endswith("not faster")
    claimed = [f for c in mb.cases for f in c.figures if f.claimed]
    assert body.count("| faster |") == len(claimed) == 2
    # The bound's least spread is said, per regime (kernelbot.confirm.stoprule's floors).
    assert "taken as at least\n1.0 % (graph regime), 3.0 % (wall regime)" in body
    # The search's own figures are nowhere: its aggregate 1.27x [1.18, 1.34] would have been printed before.
    assert "1.27×" not in body and "[1.18, 1.34]" not in body and "Over all cases" not in body
    assert "- current path (the engine's current path): not measured: cannot import sgl_kernel" in body
    assert "Not faster than the engine's current path" not in body


def test_a_kernel_slower_than_the_current_path_is_said(tmp_path: Path) -> None:
    evidence = evidence_for(tmp_path, gpu=True, current="slower")
    assert evidence.microbenchmarks.beats_current_path is False
    body = render_body(evidence, "example")
    assert "**Not faster than the engine's current path** in: t1_d2048_bf16 (graph)." in body
    assert "| graph | current path |" in body
    assert unexplained_numbers(body, evidence.to_json()) == []
    faster = evidence_for(tmp_path / "f", gpu=True, current="faster").microbenchmarks
    assert faster.beats_current_path is True and faster.not_faster_than_current == ()


def test_tools_tests_and_e2e_of_a_gpu_body(gpu_evidence: Evidence) -> None:
    body = render_body(gpu_evidence, "sglang")
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


def test_an_inconclusive_e2e_says_so_with_the_runs_it_took(tmp_path: Path) -> None:
    e2e = verify_content(e2e_measured=True, claimed=False)["e2e"]
    e2e.update(runs=20, target_half_width_pct=2.0, conclusive=False, ci_pct=[-26.26, 39.61], delta_pct=6.67)
    evidence = dataclasses.replace(evidence_for(tmp_path, gpu=True), e2e=e2e_evidence(e2e))
    assert evidence.e2e.inconclusive and evidence.e2e.runs == 20
    body = render_body(evidence, "example")
    said = "**Inconclusive**: after 20 runs per side (the cap) the interval is still wider than ±2.0 %"
    assert said in body
    assert unexplained_numbers(body, evidence.to_json()) == []
    e2e.update(runs=7, limit="time", time_budget_s=300.0)
    timed_out = dataclasses.replace(evidence, e2e=e2e_evidence(e2e))
    said = "after 7 runs per side (the time budget of 300 s) the interval is still wider than ±2.0 %"
    assert said in render_body(timed_out, "example")
    settled = e2e_evidence(verify_content(e2e_measured=True)["e2e"])
    assert not settled.inconclusive and settled.runs == 5 and not settled.stopped_by
