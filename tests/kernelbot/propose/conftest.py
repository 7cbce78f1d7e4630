"""Evidence built by kernelbot.propose from real search stores: one as a GPU run records it, one as a CPU
run through Triton's interpreter does."""

from __future__ import annotations

from pathlib import Path

import pytest
from proposal_fixtures import (
    FUNCTION,
    OP_SLUG,
    SILU_CANDIDATE,
    SILU_TASK,
    IntegrationStandIn,
    ProfileStandIn,
    gpu_result,
    interpret_result,
    make_search,
    verify_content,
)

from kernelbot.propose import Evidence, build_evidence

BASE_SHA = "3f2a9c41d0e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4"


def evidence_for(
    tmp_path: Path, *, gpu: bool, profile: ProfileStandIn | None = None, **verify: bool
) -> Evidence:
    source = SILU_CANDIDATE.read_text()
    result = gpu_result(source) if gpu else interpret_result(source)
    search = make_search(tmp_path / ("search-gpu" if gpu else "search-cpu"), result, source)
    return build_evidence(
        search_dir=search,
        task_dir=SILU_TASK,
        profile=profile or ProfileStandIn(),
        integration=IntegrationStandIn(),
        verify=verify_content(e2e_measured=gpu, **verify),
        repo_url="https://github.com/example/minisglang",
        base_sha=BASE_SHA,
        base_branch="main",
        function=FUNCTION,
        op_slug=OP_SLUG,
    )


@pytest.fixture
def gpu_evidence(tmp_path: Path) -> Evidence:
    return evidence_for(tmp_path, gpu=True)


@pytest.fixture
def cpu_evidence(tmp_path: Path) -> Evidence:
    return evidence_for(tmp_path, gpu=False)
