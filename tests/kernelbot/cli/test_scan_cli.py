"""`kernelbot scan` on the command line: the ranking without --profile is as it was; with --profile, bad
flags are one line each, and a region whose target run fails is recorded and skipped on that base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kernelbot.target.road import MINIREPO, QUICK_SEARCH, kernelbot, make_upstream, one_error_line

RMS = "*:RMSNorm.forward_native"
RMS_SEED = Path(__file__).resolve().parents[1] / "scan" / "data" / "rms_norm_rows.py"
# A test that any Triton kernel put into the norm layer's module breaks.
NORM_PURE_TORCH = (
    "import sys\n\n"
    "import minisglang.layers.layernorm  # noqa: F401\n\n\n"
    "def test_layernorm_imports_only_torch():\n"
    "    assert 'triton' not in sys.modules\n"
)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "kernelbot scan needs --repo DIR (a repository to rank) or --profile P"),
        (
            ["--profile", "example", "--profile-cmd", "python x.py"],
            "--profile-cmd is for the ranking without",
        ),
        (["--profile", "example", "--json"], "--json is for the ranking without --profile"),
        (["--profile", "example", "--max-open", "0"], "--max-open 0: expected 1 or more"),
        (["--profile", "example", "--fork", "f.git"], "--fork names where to push the PR's branch"),
        (["--profile", "example", "--open-pr"], "no GitHub token: set $GITHUB_TOKEN"),
        (["--profile", "vllm"], "unknown target profile 'vllm'"),
        (
            ["--profile", "example", "--confirm-processes", "2"],
            "--confirm-processes 2: max_processes (2) is below min_processes (3)",
        ),
    ],
)
def test_bad_flags_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch, args: list[str], expected: str
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    code, _, err = kernelbot(capsys, "scan", "--state-dir", tmp_path / "state", *args)
    assert code == 1 and expected in one_error_line(err)
    assert not (tmp_path / "state").exists()


def test_the_ranking_without_a_profile_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = kernelbot(capsys, "scan", "--repo", MINIREPO, "--top", "3")
    assert code == 0, err
    best = "minisglang.attention.flash_backend:FlashDecodeBackend.forward_decode"
    assert (
        "static ranking of" in out and f"next: kernelbot extract --repo {MINIREPO} --function {best}" in out
    )
    code, out, err = kernelbot(capsys, "scan", "--repo", MINIREPO, "--top", "3", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert len(payload["static"]) == 3 and "dynamic" not in payload
    assert (
        payload["static"][0]["target"]
        == "minisglang.attention.flash_backend:FlashDecodeBackend.forward_decode"
    )


@pytest.mark.slow
def test_a_failed_region_is_recorded_and_skipped_on_that_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """The kernel for the only region breaks one of the repository's tests: the failure is recorded, the
    scan ends normally, and the next scan of the same commit skips the region. No token and no --open-pr:
    bundles only, the PRs as the ledger has them; the benchmark cannot be profiled (it runs no operator),
    so the ranking is static and says why."""
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    upstream, _ = make_upstream(tmp_path, {"tests/test_norm_pure_torch.py": NORM_PURE_TORCH})
    config = tmp_path / "kernelbot.toml"
    config.write_text(
        '[profiles.example]\nextends = "example"\n'
        '[profiles.example.benchmark]\nargv = ["python", "-c", "pass"]\n'
    )
    state = tmp_path / "state"
    args = ["scan", "--profile", "example", "--repo", f"file://{upstream}", "--state-dir", state]
    args += ["--config", config, "--only", RMS, *QUICK_SEARCH, "--seed", RMS_SEED, "--max-attempts", "1"]
    code, out, err = kernelbot(capsys, *args)
    assert code == 0, err
    assert "ranking: static evidence (the benchmark could not be profiled" in out
    assert "pull requests: as the ledger last synced them (no $GITHUB_TOKEN to ask the forge)" in out
    assert "chosen: target failed: with the change 1 related test(s) fail that did not fail before" in out
    report = json.loads((state / "last-scan.json").read_text())
    (run,) = report["runs"]
    assert run["status"] == "failed" and "test_layernorm_imports_only_torch" in run["error"]
    assert Path(run["run_dir"]).name.startswith("rms-norm-forward-native-")
    assert (state / "last-run").read_text().strip() == run["run_dir"]

    # The same commit again: the failure stands, nothing is run, and the ranking is the cached one.
    code, out, err = kernelbot(capsys, *args)
    assert code == 0, err
    assert "failed: target failed on this base: with the change 1 related test(s) fail" in out
    assert (
        "tried again when the base moves" in out
        and "(the ranking of this commit from an earlier scan)" in out
    )
    assert json.loads((state / "last-scan.json").read_text())["runs"] == []


def test_confirm_processes_reaches_every_target_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """--confirm-processes on `target` and on `scan` is the cap of the confirmation each target run makes."""
    import kernelbot.cli.scan as scan_cli
    import kernelbot.cli.target as target_cli

    seen: list[int] = []

    def keep(options) -> int:  # type: ignore[no-untyped-def]
        seen.append(options.confirm.max_processes)
        return 0

    monkeypatch.setattr(target_cli, "run", keep)
    monkeypatch.setattr(scan_cli, "run_periodic", keep)
    code, _, err = kernelbot(capsys, "target", "example", "--function", "m:f", "--confirm-processes", "4")
    assert code == 0, err
    code, _, err = kernelbot(capsys, "scan", "--profile", "example", "--confirm-processes", "5")
    assert code == 0, err
    code, _, err = kernelbot(capsys, "target", "example", "--function", "m:f")
    assert code == 0, err
    assert seen == [4, 5, 10]

    from evolution.search import SearchOverrides
    from kernelbot.confirm.stoprule import StopRule
    from kernelbot.scan.runs import target_options

    options = target_options(
        profile="example", target="m:f", run_dir=tmp_path, repo=tmp_path, search=SearchOverrides(), seeds=[],
        open_pr=False, fork=None, token_env="T", max_open=1, benchmark_runs=0, config=None,
        confirm=StopRule(max_processes=6),
    )  # fmt: skip
    assert options.confirm.max_processes == 6
