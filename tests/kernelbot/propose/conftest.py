"""Evidence built by kernelbot.propose from real search stores: one as a GPU run records it, one as a CPU
run through Triton's interpreter does."""

from __future__ import annotations

from pathlib import Path

import pytest
from proposal_fixtures import evidence_for

from kernelbot.propose import Evidence


@pytest.fixture
def gpu_evidence(tmp_path: Path) -> Evidence:
    return evidence_for(tmp_path, gpu=True)


@pytest.fixture
def cpu_evidence(tmp_path: Path) -> Evidence:
    return evidence_for(tmp_path, gpu=False)
