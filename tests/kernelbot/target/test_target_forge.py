"""The forge a target run proposes through: its API URL from --github-api, else $KERNELBOT_GITHUB_API, else
the profile's api_url; the repository from the profile's repo_url."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kernelbot.engines import load_profile
from kernelbot.target.options import TargetOptions
from kernelbot.target.proposal import make_forge
from tests.kernelbot.target.road import SILU, kernelbot, one_error_line

PROFILE_API = "http://127.0.0.1:9/profile/api/v3"
ENV_API = "http://127.0.0.1:9/env/api/v3"
FLAG_API = "http://127.0.0.1:9/flag/api/v3"


def test_the_environment_wins_over_the_profile_and_the_flag_over_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KB_TEST_TOKEN", "a-token")
    profile = dataclasses.replace(load_profile("example"), api_url=PROFILE_API)
    options = TargetOptions(profile="example", function=SILU, open_pr=True, token_env="KB_TEST_TOKEN")

    monkeypatch.delenv("KERNELBOT_GITHUB_API", raising=False)
    forge = make_forge(options, profile)
    assert forge.api_url == PROFILE_API and forge.repo == "kernelbot/minisglang"

    monkeypatch.setenv("KERNELBOT_GITHUB_API", ENV_API)
    assert make_forge(options, profile).api_url == ENV_API

    flagged = dataclasses.replace(options, github_api=FLAG_API)
    assert make_forge(flagged, profile).api_url == FLAG_API


def test_github_api_needs_open_pr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = kernelbot(
        capsys, "target", "example", "--function", SILU, "--out", tmp_path / "r", "--github-api", FLAG_API
    )
    assert code == 1 and "--github-api names the API" in one_error_line(err) and "needs --open-pr" in err
    assert not (tmp_path / "r").exists()
