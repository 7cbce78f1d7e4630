"""bench/real_kernels.py end to end on the CPU: `prepare` writes tasks and candidates from the releases,
`run` judges them (here with the interpreter, on the H200 with triton-cuda) and writes the JSON and the
table; `pack` copies the releases so that a machine without the registry builds the same corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import real_kernels
from bench.real_kernel_corpus import LIGER, LMDEPLOY, release_root
from extractors.errors import ExtractionError

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lmdeploy() -> Path:
    roots = {}
    for requirement in (LMDEPLOY, LIGER):
        try:
            roots[requirement] = release_root(requirement)
        except ExtractionError as exc:
            pytest.skip(f"cannot obtain {requirement} (is the package registry reachable?): {exc}")
    return roots[LMDEPLOY]


def test_prepare_then_run_writes_a_verdict_and_a_table(lmdeploy: Path, tmp_path: Path) -> None:
    # The rotary kernel: its cases run in seconds under the interpreter, the RMSNorm's in over a minute.
    only = ["lmdeploy_apply_rotary"]
    prepared = real_kernels.prepare(tmp_path / "prepared", cache=None, gpu=False, only=only)
    assert (prepared / "tasks" / "apply_rotary" / "task.toml").is_file()
    assert "@triton.jit" in (prepared / "candidates" / "lmdeploy_apply_rotary.py").read_text()
    code = real_kernels.run(prepared, tmp_path / "out", backend="triton-interpret")
    report = json.loads((tmp_path / "out" / "real_kernels.json").read_text())
    row = report["results"][0]
    assert code == 0 and row["passed"] and row["hacks"] == [], row
    assert {c["case"] for c in row["cases"] if not c["hidden"]} == {"tokens1", "tokens17"}
    table = (tmp_path / "out" / "real_kernels.md").read_text()
    assert "| lmdeploy_apply_rotary | LMDeploy | apply_rotary | accepted (not timed) |" in table


def test_pack_copies_the_releases_into_a_cache_root(lmdeploy: Path, tmp_path: Path) -> None:
    packed = real_kernels.pack(tmp_path / "cache")
    copied = packed / "sources" / lmdeploy.name
    assert (copied / "lmdeploy" / "pytorch" / "kernels" / "cuda" / "rms_norm.py").is_file()
    assert release_root(LMDEPLOY, packed) == copied  # read back as a cache, no download
