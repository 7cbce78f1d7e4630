"""bench/extract_sweep.py on a CPU-sized subset of LMDeploy 0.18.0's default backend: an op whose working
object `__init__` builds (GELU; SiLU's road without a spec, extraction included, is
tests/kernelbot/target/test_target_lmdeploy_draft.py) and the embedding extract with no spec into tasks
whose reference runs; the sweep's target list finds every `Default*Impl.forward` and leaves out the ones
with no PyTorch path. The release comes from the source cache (downloaded once; skipped when the registry
is unreachable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import extract_sweep
from extractors.errors import ExtractionError
from extractors.release_sources import fetch_release

pytestmark = [pytest.mark.slow, pytest.mark.network]

SUBSET = [
    "lmdeploy.pytorch.backends.default.activation:DefaultGeluAndMulImpl.forward",
    "lmdeploy.pytorch.backends.default.embedding:DefaultEmbeddingImpl.forward",
]


@pytest.fixture(scope="module")
def lmdeploy() -> Path:
    try:
        return fetch_release(extract_sweep.LMDEPLOY)
    except ExtractionError as exc:
        pytest.skip(f"cannot obtain {extract_sweep.LMDEPLOY} (is the package registry reachable?): {exc}")


def test_the_target_list_covers_the_default_backend(lmdeploy: Path) -> None:
    targets = {t.function: t for t in extract_sweep.lmdeploy_targets(lmdeploy)}
    assert set(SUBSET) <= set(targets) and len(targets) >= 12
    assert all(targets[f].pytorch for f in SUBSET)


@pytest.mark.parametrize("function", SUBSET)
def test_extracts_without_a_spec_and_the_reference_runs(
    lmdeploy: Path, function: str, tmp_path: Path
) -> None:
    target = extract_sweep.Target(extract_sweep.LMDEPLOY, function)
    row = extract_sweep.sweep_one(target, lmdeploy, tmp_path / "task", timeout=300)
    assert row.extracted and row.ran, row.reason
