"""build_evidence from a real search store, verify.json's content and the integration: every number taken
from its source, claims decided by the intervals, and an exact JSON round trip."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from proposal_fixtures import (
    BASE_SHA,
    SILU_CANDIDATE,
    SILU_TASK,
    ProfileStandIn,
    evidence_for,
    gpu_result,
    integration_record,
    interpret_result,
    make_search,
    unexplained_numbers,
)

import kernelbot
from evaluators.api import evaluate_candidate
from evaluators.candidate import load_candidate
from evaluators.config import EvalConfig
from evaluators.task import load_task
from evolution.config import SearchConfig
from evolution.redact import Redactor
from evolution.store import RunStore
from kernelbot.errors import RunStateError
from kernelbot.propose import Evidence, build_evidence, kernel_hash, render_body
from kernelbot.propose.evidence import EVIDENCE_SCHEMA


def test_gpu_evidence_takes_every_number_from_its_source(gpu_evidence: Evidence) -> None:
    e = gpu_evidence
    assert e.schema == EVIDENCE_SCHEMA
    assert (
        e.op.slug == "silu-and-mul-forward-native"
        and e.op.title == "Fused Triton kernel for SiluAndMul.forward_native"
    )
    assert e.op.kernel_hash == kernel_hash(SILU_CANDIDATE.read_text())
    assert e.repo.base_sha == BASE_SHA and e.repo.branch == "main"
    assert (e.environment.gpu, e.environment.driver, e.environment.torch) == (
        "NVIDIA H200",
        "570.124.06",
        "2.11.0+cu128",
    )
    assert e.environment.kernelbot == kernelbot.__version__

    # Speed comes from the confirmation alone: the search's own figures (1.2671x, [1.1834, 1.3377]) never.
    mb = e.microbenchmarks
    assert mb.measured and mb.regime == "graph" and mb.confidence_pct == 97.5
    assert (mb.min_processes, mb.max_processes, mb.confirm_s) == (3, 10, 41.7)
    assert mb.spread_floor_pct == (("graph", 1.0), ("wall", 3.0))  # the rule's floors, in percent
    assert [(c.name, c.available) for c in mb.columns] == [
        ("eager", True),
        ("compile", True),
        ("current", False),
    ]
    assert "sgl_kernel" in mb.columns[2].reason and mb.beats_current_path is None
    assert [(c.name, c.regime) for c in mb.cases] == [
        ("t1_d2048_bf16", "graph"),
        ("t16_d1792_fp32", "graph"),
        ("t1_d2048_bf16", "wall"),
        ("t16_d1792_fp32", "wall"),
    ]
    first = mb.cases[0]
    assert [f.column for f in first.figures] == ["eager", "compile"]
    eager, compiled = first.figures
    assert compiled.claimed and compiled.pooled < eager.pooled
    assert (
        eager.claimed
        and eager.processes == 3
        and eager.bound is not None
        and 1.0 < eager.bound < eager.pooled
    )
    assert eager.baseline_us == 5.61 and eager.cv_pct is not None and eager.cv_pct < 1.0
    assert mb.cases[1].figures[1].verdict == "not faster"  # torch.compile is faster on the fp32 case
    assert not mb.cases[2].figures[0].claimed  # the wall regime's spread keeps its bound below 1
    assert "1.2671" not in e.to_json() and "1.1834" not in e.to_json()

    acc = e.accuracy
    assert acc.seeds_per_case == 3 and acc.hidden_cases == 1 and acc.dynamic_keys == ("tokens",)
    bf16 = acc.cases[0]
    assert (bf16.dtype, bf16.atol, bf16.rtol, bf16.max_abs_error) == ("bfloat16", 1e-2, 2e-2, 0.0039)
    assert acc.cases[-1].hidden

    assert e.tests.ran and e.tests.preexisting_failures == ("tests/test_layers.py::test_rope_cache",)
    assert e.tests.before.passed == 11 and e.tests.after.skipped == 2
    assert e.e2e.measured and e.e2e.claimed and e.e2e.delta_pct == 3.973
    assert (e.e2e.ci_low_pct, e.e2e.ci_high_pct, e.e2e.confidence_pct) == (3.61, 4.42, 95)
    assert e.e2e.before_cv_pct == pytest.approx(0.2457)

    p = e.provenance
    assert p.operators == {"llm": 1, "seed": 1} and p.models == ("deepseek-chat",)
    assert (p.iterations, p.evaluations, p.prompt_tokens, p.completion_tokens) == (1, 2, 1843, 612)
    assert p.cost_usd == 0.0031 and p.search_s == 742.4 and p.best_operator == "llm:deepseek-chat"
    assert e.modifications.files == (
        "minisglang/layers/activation.py",
        "minisglang/layers/kernels/silu_and_mul_triton.py",
        "tests/test_silu_and_mul_triton.py",
    )
    assert e.reproduce == "python -m pytest -q tests/test_silu_and_mul_triton.py"


def test_json_round_trip_is_exact(gpu_evidence: Evidence, cpu_evidence: Evidence) -> None:
    for e in (gpu_evidence, cpu_evidence):
        again = Evidence.from_json(e.to_json())
        assert again == e
        assert again.to_json() == e.to_json()


def test_an_unknown_schema_is_refused(gpu_evidence: Evidence) -> None:
    data = json.loads(gpu_evidence.to_json())
    data["schema"] = 99
    with pytest.raises(RunStateError, match="schema 99"):
        Evidence.from_dict(data)


def test_interpreter_evidence_says_no_speed_was_measured(cpu_evidence: Evidence) -> None:
    mb = cpu_evidence.microbenchmarks
    assert not mb.measured and mb.cases == () and mb.beats_current_path is None
    assert mb.reason == "not measured on this machine (CPU interpreter)"
    assert [c.processes for c in mb.columns] == [1, 1, 0]  # the confirmation's processes ran all the same
    assert not cpu_evidence.e2e.measured and "no GPU" in cpu_evidence.e2e.reason
    skipped = [c for c in cpu_evidence.accuracy.cases if c.skipped]
    assert skipped and skipped[0].max_abs_error is None


def test_a_change_that_does_not_clear_the_noise_is_not_claimed(tmp_path: Path) -> None:
    e = evidence_for(tmp_path, gpu=True, claimed=False)
    assert e.e2e.measured and not e.e2e.claimed and e.e2e.ci_low_pct == -0.31


def test_without_verification_the_evidence_says_so(tmp_path: Path) -> None:
    source = SILU_CANDIDATE.read_text()
    search = make_search(tmp_path / "s", gpu_result(source), source)
    e = build_evidence(
        search_dir=search,
        task_dir=SILU_TASK,
        profile=ProfileStandIn(title="[Feature] {summary}"),
        integration=integration_record(),
        verify=None,
        repo_url="u",
        base_sha=BASE_SHA,
        base_branch="main",
        function="a.b:C.d",
        op_slug="c-d",
    )
    assert not e.tests.ran and "not run" in e.tests.reason
    assert not e.e2e.measured and "not run" in e.e2e.reason
    # No confirmation either: the search's own timings are not shown in its place.
    assert not e.microbenchmarks.measured and "no confirmation run" in e.microbenchmarks.reason
    assert e.op.title == "[Feature] Fused Triton kernel for C.d"


def test_a_search_without_a_passing_candidate_has_nothing_to_propose(tmp_path: Path) -> None:
    task = load_task(SILU_TASK)
    with RunStore.create(tmp_path / "s", task, SearchConfig(), Redactor()):
        pass
    with pytest.raises(RunStateError, match="no candidate passed the evaluator"):
        build_evidence(
            search_dir=tmp_path / "s",
            task_dir=SILU_TASK,
            profile=ProfileStandIn(),
            integration=integration_record(),
            verify=None,
            repo_url="u",
            base_sha=BASE_SHA,
            base_branch="main",
            function="f",
            op_slug="f",
        )


def test_kernel_hash_ignores_line_endings_and_trailing_blanks() -> None:
    source = interpret_result.__doc__ or "def f():\n    return 1\n"
    assert kernel_hash("a = 1  \r\nb = 2\n\n") == kernel_hash("a = 1\nb = 2")
    assert kernel_hash("a = 1\n") != kernel_hash("a = 2\n")
    assert (
        kernel_hash(source)
        == hashlib.sha256(
            "\n".join(line.rstrip() for line in source.strip().splitlines()).encode()
        ).hexdigest()
    )


@pytest.mark.slow
def test_a_real_interpreter_evaluation_becomes_evidence_that_claims_no_speed(tmp_path: Path) -> None:
    """The evaluator's own verdict on CPU (no stand-in): errors per case, big cases skipped, no timing."""
    task = load_task(SILU_TASK)
    result = evaluate_candidate(
        task, load_candidate(SILU_CANDIDATE, task.entry), EvalConfig(backend="triton-interpret")
    )
    assert result.correct and result.backend == "triton-interpret"
    search = make_search(tmp_path / "s", result, SILU_CANDIDATE.read_text())
    e = build_evidence(
        search_dir=search,
        task_dir=SILU_TASK,
        profile=ProfileStandIn(),
        integration=integration_record(),
        verify=None,
        repo_url="https://github.com/example/minisglang",
        base_sha=BASE_SHA,
        base_branch="main",
        function="minisglang.layers.activation:SiluAndMul.forward_native",
        op_slug="silu-and-mul-forward-native",
    )
    assert not e.microbenchmarks.measured and e.environment.backend == "triton-interpret"
    assert any(c.skipped for c in e.accuracy.cases) and any(c.hidden for c in e.accuracy.cases)
    body = render_body(e, "example")
    assert "**No speed was measured**: the kernel was not re-measured apart from the search" in body
    assert unexplained_numbers(body, e.to_json()) == []
