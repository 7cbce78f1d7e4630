"""Only facts in words: the body states the timing regime as assumed (nothing records where the engine runs
the function), ticks no lint box no tool confirmed, and for a release names the base by its upstream tag;
reproduce.sh checks that tag out and runs the new test alone, not the related suite."""

from __future__ import annotations

import dataclasses
import re

import pytest

from kernelbot.propose import Evidence, render_body
from kernelbot.propose.render import render_reproduce

TEMPLATES = ("sglang", "lmdeploy", "example")


@pytest.mark.parametrize("template", TEMPLATES)
def test_the_body_claims_no_unmeasured_regime_and_no_unconfirmed_lint(
    gpu_evidence: Evidence, template: str
) -> None:
    body = render_body(gpu_evidence, template)
    assert "In the engine" not in body and "runs inside a captured CUDA graph" not in body
    assert "assumed, not observed" in body
    assert "checked on;" not in body  # the kernel's conditions are listed, not "what it was checked on"
    assert not re.search(r"- \[x\][^\n]*[Ll]int", body), body


def test_a_release_is_reproduced_from_its_tag_with_the_new_test_only(gpu_evidence: Evidence) -> None:
    repo = dataclasses.replace(gpu_evidence.repo, base_ref="v0.5.23")
    tests = dataclasses.replace(
        gpu_evidence.tests,
        command=("python3", "-m", "pytest", "-q", "test/srt/test_other.py", "test/srt/test_x_triton.py"),
        files=("test/srt/test_other.py", "test/srt/test_x_triton.py"),
    )
    modifications = dataclasses.replace(gpu_evidence.modifications, test_file="test/srt/test_x_triton.py")
    evidence = dataclasses.replace(gpu_evidence, repo=repo, tests=tests, modifications=modifications)
    body = render_body(evidence, "sglang")
    assert "release tagged `v0.5.23`" in body
    assert f"Made and verified on `{gpu_evidence.repo.base_sha[:12]}`" not in body
    script = render_reproduce(evidence)
    assert "base=v0.5.23" in script and gpu_evidence.repo.base_sha not in script
    assert "python3 -m pytest -q test/srt/test_x_triton.py" in script
    assert "test_other.py" not in script


def test_the_benchmark_script_is_listed_and_run_only_with_a_gpu(gpu_evidence: Evidence) -> None:
    bench = "benchmark/kernels/bench_silu_and_mul_triton.py"
    modifications = dataclasses.replace(
        gpu_evidence.modifications, bench_file=bench, files=(*gpu_evidence.modifications.files, bench)
    )
    evidence = dataclasses.replace(gpu_evidence, modifications=modifications)
    body = render_body(evidence, "sglang")
    assert f"- New benchmark: `{bench}`" in body and f"- Changed: `{bench}`" not in body
    script = render_reproduce(evidence)
    assert f"python {bench}" in script and "torch.cuda.is_available()" in script


def test_the_body_says_where_the_kernel_is_wired_and_when_the_engine_uses_it(gpu_evidence: Evidence) -> None:
    slot = "SiluAndMul.forward_triton (layers/activation.py); SiluAndMul.forward_native is unchanged"
    selection = "registered opt-in, not declared in capabilities: it did not beat the path the op takes today"
    modifications = dataclasses.replace(
        gpu_evidence.modifications,
        files=(*gpu_evidence.modifications.files, "layers/activation.py"),
        slot=slot,
        selection=selection,
    )
    body = render_body(dataclasses.replace(gpu_evidence, modifications=modifications), "sglang")
    assert f"- Where the kernel is wired in: {slot}" in body
    assert f"- When the engine uses it: {selection}" in body
    # the op's reference is not edited, so the body does not say it calls the kernel
    assert "calls the kernel when its inputs fit" not in body
    assert "- Changed: `layers/activation.py`" in body
    assert "torch.compile region" not in body
