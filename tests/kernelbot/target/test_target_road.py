"""The whole `kernelbot target example` road on a CPU, for real: extraction of the bundled example, a search
judged by Triton's interpreter, the codemod, the repository's tests before and after in clean work trees,
the bundle, and the pull request on a loopback stateful GitHub fake whose PR heads live in a real bare fork.

Each search starts from a seed file and stops at its first correct candidate, so a whole run costs seconds
of search and the rest is the real work around it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelbot import git
from kernelbot.target.state import TargetState
from tests.kernelbot.git_repos import run_git
from tests.kernelbot.github_fake import ACCEPTED_TOKEN
from tests.kernelbot.target.road import (
    FLAT,
    KNOWN_ISSUE,
    PURE_TORCH,
    QUICK_SEARCH,
    ROWWISE,
    SILU,
    UPSTREAM_REPO,
    WRONG,
    fake_profile,
    kernelbot,
    make_upstream,
    one_error_line,
)

pytestmark = pytest.mark.slow


def no_token_anywhere(root: Path) -> None:
    """The token the fake accepts appears in no file written under `root` (run dirs, repos, logs)."""
    for path in root.rglob("*"):
        if path.is_file():
            assert ACCEPTED_TOKEN.encode() not in path.read_bytes(), f"the token leaked into {path}"


def test_the_pull_request_road(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], github_fake, monkeypatch
) -> None:
    upstream, base = make_upstream(tmp_path, {"tests/test_known_issue.py": KNOWN_ISSUE})
    fork = git.init_repository(tmp_path / "fork.git", bare=True)
    fake = github_fake(repo=UPSTREAM_REPO, forks={"contributor/minisglang": fork})
    config = fake_profile(tmp_path / "kernelbot.toml", fake.url)
    monkeypatch.setenv("GITHUB_TOKEN", ACCEPTED_TOKEN)
    common = ["--repo", f"file://{upstream}", "--config", config, *QUICK_SEARCH, "--no-inductor-seed"]

    def target(out: str, seed: Path, *extra: object) -> tuple[int, str, str]:
        return kernelbot(
            capsys,
            "target",
            "example",
            "--function",
            SILU,
            "--out",
            tmp_path / out,
            "--seed",
            seed,
            *common,
            *extra,
        )

    # 1. The first run opens the PR.
    code, out, err = target("r1", ROWWISE, "--open-pr", "--fork", fork)
    assert code == 0, err
    run = tmp_path / "r1"
    state = TargetState.load(run)
    assert state.first_unfinished() is None and state.repo.base_commit == base
    (pr,) = fake.pulls()
    assert pr["state"] == "open" and pr["head"]["ref"] == state.outcome("propose")["branch"]
    assert pr["html_url"].startswith(fake.root) and "pull request: opened" in out
    first_hash = state.outcome("propose")["kernel_hash"]
    assert first_hash in pr["body"]  # the hidden marker carries the kernel

    # Verification: the known upstream failure is pre-existing, nothing new broke, no speed was invented.
    verify = json.loads((run / "verify.json").read_text())
    assert verify["ok"] and verify["tests"]["new_failures"] == []
    assert verify["tests"]["preexisting_failures"] == ["tests/test_known_issue.py::test_known_issue"]
    assert "tests/test_layers.py" in verify["tests"]["files"]
    assert verify["tests"]["after"]["passed"] > verify["tests"]["before"]["passed"]  # the generated test
    assert not verify["e2e"]["measured"] and "no GPU" in verify["e2e"]["reason"]
    assert verify["e2e"]["before"] == [] and verify["e2e"]["delta_pct"] is None
    assert "pre-existing" in err and "test_known_issue" in err

    # The bundle: a patch that applies on the base commit, and evidence that says no speed was measured.
    bundle = run / "pr"
    evidence = json.loads((bundle / "evidence.json").read_text())
    assert evidence["microbenchmarks"]["measured"] is False
    assert "interpreter" in evidence["microbenchmarks"]["reason"]
    assert evidence["e2e"]["measured"] is False
    assert evidence["tests"]["preexisting_failures"] == ["tests/test_known_issue.py::test_known_issue"]
    assert "not measured on this machine (cpu interpreter)" in (bundle / "body.md").read_text().lower()
    # The confirmation ran its processes all the same, apart from the search (RUN/confirm.json).
    confirmed = json.loads((run / "confirm.json").read_text())
    assert confirmed["measured"] is False and [c["processes"] for c in confirmed["columns"]][:2] == [1, 1]
    check = tmp_path / "check"
    run_git(tmp_path, "clone", "--quiet", str(upstream), str(check))
    run_git(check, "apply", "--check", str(bundle / "patch.diff"))
    assert (bundle / "reproduce.sh").stat().st_mode & 0o111
    # The engine's slot: SiluAndMul gains a forward_triton backend (opt-in: nothing was timed), its kernel
    # sits with the engine's Triton backends, and no line of the layer's module (forward_native) changes.
    patch = (bundle / "patch.diff").read_text()
    assert "+++ b/minisglang/kernels/ops/activation/silu_and_mul_triton.py" in patch
    assert "+    def forward_triton(self, x: torch.Tensor) -> torch.Tensor:" in patch
    layer_diff = patch.split("+++ b/minisglang/layers/activation.py")[1].split("diff --git")[0]
    assert not [ln for ln in layer_diff.splitlines() if ln.startswith("-")]
    slot = evidence["modifications"]
    assert "SiluAndMul.forward_triton" in slot["slot"] and not slot["auto_selected"]
    assert "was not measured" in slot["selection"]
    # The generated test runs its cases in the dtypes the task's cases were built in and in no other: the
    # evaluator checked the kernel in those (a float32-only check once generated bfloat16 and float16 cases
    # that a kernel without an upcast failed in verification).
    assert "+DTYPES = [torch.float32, torch.bfloat16, torch.float16]" in patch
    # The current path, named with why it has no column: the example's op has no forward_cuda.
    assert "SiluAndMul has no forward_cuda" in (bundle / "body.md").read_text()

    # 2. The same run again, same kernel: the forge is asked, the PR is left as it is.
    code, out, err = target("r1", ROWWISE, "--open-pr", "--fork", fork)
    assert code == 0, err
    assert len(fake.pulls()) == 1 and "pull request: skipped" in out
    assert state.outcome("evolve") == TargetState.load(run).outcome("evolve")  # the search was not redone

    # 3. A refused token: one line, exit 1, the run intact.
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_notTheRightOne000000000000000000000000")
    code, _, err = target("r1", ROWWISE, "--open-pr", "--fork", fork)
    assert code == 1 and "GITHUB_TOKEN was refused" in one_error_line(err)
    monkeypatch.setenv("GITHUB_TOKEN", ACCEPTED_TOKEN)
    assert TargetState.load(run).is_done("verify")

    # 4. Another kernel for the same function (a second run): pushing it to a fork that does not exist is
    #    one line and exit 1; with the right fork the open PR is updated, not duplicated.
    code, _, err = target("r2", FLAT, "--open-pr", "--fork", tmp_path / "no-such-fork.git")
    assert code == 1 and "no-such-fork.git" in one_error_line(err)
    assert len(fake.pulls()) == 1
    code, out, err = target("r2", FLAT, "--open-pr", "--fork", fork)
    assert code == 0, err
    (pr,) = fake.pulls()
    second_hash = TargetState.load(tmp_path / "r2").outcome("propose")["kernel_hash"]
    assert second_hash != first_hash and second_hash in pr["body"] and first_hash not in pr["body"]
    assert "pull request: updated" in out and len(fake.comments(pr["number"])) == 1
    assert (
        pr["head"]["sha"] == run_git(tmp_path, "--git-dir", str(fork), "rev-parse", pr["head"]["ref"]).strip()
    )

    # 5. The maintainers close it: the rejected kernel is never proposed again.
    fake.close(pr["number"])
    code, out, err = target("r2", FLAT, "--open-pr", "--fork", fork)
    assert code == 0, err
    assert len(fake.pulls()) == 1 and fake.pulls()[0]["state"] == "closed" and "refused" in out

    no_token_anywhere(tmp_path)


def test_a_kernel_that_breaks_a_test_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    upstream, _ = make_upstream(tmp_path, {"tests/test_pure_torch.py": PURE_TORCH})
    args = [
        "target",
        "example",
        "--function",
        SILU,
        "--repo",
        f"file://{upstream}",
        "--out",
        tmp_path / "run",
    ]
    args += [*QUICK_SEARCH, "--seed", ROWWISE]
    code, _, err = kernelbot(capsys, *args)
    line = one_error_line(err)
    assert (
        code == 1
        and "1 related test(s) fail that did not fail before" in line
        and "tests/test_pure_torch.py::test_activation_imports_only_torch" in line
    )
    assert not (tmp_path / "run" / "pr").exists()
    verify = json.loads((tmp_path / "run" / "verify.json").read_text())
    assert verify["ok"] is False and verify["tests"]["before"]["failures"] == []
    # The verdict stands: a re-run repeats it without verifying (or searching) again.
    before = (tmp_path / "run" / "verify.json").stat().st_mtime_ns
    code, _, err = kernelbot(capsys, *args)
    assert code == 1 and "test_activation_imports_only_torch" in one_error_line(err)
    assert (tmp_path / "run" / "verify.json").stat().st_mtime_ns == before


def test_no_kernel_passed_the_evaluator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["target", "example", "--function", SILU, "--out", tmp_path / "run", *QUICK_SEARCH]
    code, _, err = kernelbot(capsys, *args, "--seed", WRONG, "--iterations", "1")
    line = one_error_line(err)
    # The search stops at its seeds: none is correct, and no operator of this run can repair one.
    assert code == 1 and "every seed candidate failed" in line and "correctness" in line
    state = TargetState.load(tmp_path / "run")
    assert state.stages["evolve"].status == "failed" and state.is_done("extract")


def test_resume_after_a_kill_mid_search(tmp_path: Path) -> None:
    """A real `kernelbot target` process killed while its search runs; the re-run judges nothing twice."""
    run = tmp_path / "run"
    # The row-wise seed is judged within seconds while the Inductor seed's capture still runs: the kill
    # lands between the two.
    cmd = [sys.executable, "-m", "kernelbot.cli", "target", "example", "--function", SILU, "--out", str(run)]
    cmd += ["--backend", "triton-interpret", "--workers-per-device", "1", "--seed", str(ROWWISE)]
    cmd += ["--no-fusion-seed"]  # the Inductor seed alone is the slow one the kill lands before
    log = (tmp_path / "first.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    db = run / "search" / "run.sqlite"
    judged: list[tuple[str, str]] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None and not judged:
            if db.is_file():
                try:
                    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                        judged = list(conn.execute("SELECT program_id, sha FROM evaluations"))
                except sqlite3.OperationalError:
                    pass
            time.sleep(0.1)
        assert proc.poll() is None and judged, (tmp_path / "first.log").read_text()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    state = TargetState.load(run)
    # Killed mid-search as a rule (the Inductor seed's capture takes longer than the row-wise seed's
    # judging); on a machine where it did not, the kill still lands in a later unfinished stage.
    assert state.is_done("extract") and state.first_unfinished() in (
        "evolve",
        "integrate",
        "verify",
        "propose",
    )

    resumed = subprocess.run(
        [*cmd, "--resume", "--no-inductor-seed"], capture_output=True, text=True, timeout=400
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "[extract] already done" in resumed.stdout
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        after = list(conn.execute("SELECT program_id, sha FROM evaluations"))
    assert after[: len(judged)] == judged  # kept, in order
    assert len({sha for _, sha in after}) == len(after)  # and nothing judged twice
    state = TargetState.load(run)
    assert state.first_unfinished() is None and (run / "pr" / "patch.diff").is_file()
