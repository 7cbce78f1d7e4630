"""Bad input to `kernelbot target` is one clear line and exit 1, before anything expensive runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelbot.target.state import TargetState
from tests.kernelbot.git_repos import Repos
from tests.kernelbot.target.road import QUICK_SEARCH, SILU, kernelbot, one_error_line


def test_unknown_profile_and_function(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = kernelbot(capsys, "target", "nope", "--function", SILU, "--out", tmp_path / "a")
    assert code == 1 and "unknown target profile 'nope'; known profiles: example" in one_error_line(err)
    assert not (tmp_path / "a").exists()

    function = "minisglang.layers.activation:SiluAndMul.forward_cuda_fast"
    code, _, err = kernelbot(capsys, "target", "example", "--function", function, "--out", tmp_path / "b")
    line = one_error_line(err)
    assert code == 1 and "defines no 'SiluAndMul.forward_cuda_fast'" in line and "near misses" in line
    # Nothing is lost: the upstream copy and the failed stage are recorded; a fixed re-run goes on from there.
    state = TargetState.load(tmp_path / "b")
    assert state.stages["extract"].status == "failed" and "forward_cuda_fast" in state.stages["extract"].error


def test_a_dirty_checkout(repos: Repos, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repos.checkout / "README.md").write_text("# edited, not committed\n")
    code, _, err = kernelbot(
        capsys, "target", "example", "--function", SILU, "--repo", repos.checkout, "--out", tmp_path / "r"
    )
    assert code == 1 and "has uncommitted changes (README.md)" in one_error_line(err)
    assert not (tmp_path / "r" / "target.toml").exists()


def test_flags_checked_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    code, _, err = kernelbot(
        capsys, "target", "example", "--function", SILU, "--out", tmp_path / "r", "--open-pr"
    )
    assert code == 1 and "no GitHub token: set $GITHUB_TOKEN" in one_error_line(err)
    code, _, err = kernelbot(
        capsys, "target", "example", "--function", SILU, "--out", tmp_path / "r", "--resume"
    )
    assert code == 1 and "holds no target run to continue" in one_error_line(err)
    code, _, err = kernelbot(capsys, "target", "example", "--function", SILU, "--fork", "x", *QUICK_SEARCH)
    assert code == 1 and "it needs --open-pr" in one_error_line(err)
    code, _, err = kernelbot(
        capsys, "target", "example", "--function", SILU, "--spec", tmp_path / "none.toml"
    )
    assert code == 1 and "none.toml: no such file" in one_error_line(err)
