"""Periodic scans of the bundled example for real, on a CPU: the ranking measured under the example's
benchmark (torch.profiler), `kernelbot target` on the best unproposed region (Triton's interpreter, the
repository's tests in clean work trees, the bundle), and the PRs on a loopback stateful GitHub fake whose
heads live in a real bare fork, against a real bare upstream that moves between scans.

The scans consider two regions (--only), each search starts from a seed that fits it and stops at its first
correct candidate, and the benchmark is profiled at a tiny size; which region ranks first is the machine's
measurement, so the test follows whichever it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelbot import git
from kernelbot.forge.marker import parse_marker
from tests.kernelbot.git_repos import run_git
from tests.kernelbot.github_fake import ACCEPTED_TOKEN
from tests.kernelbot.target.road import ROWWISE, UPSTREAM_REPO, kernelbot, make_upstream, one_error_line
from tests.kernelbot.target.test_target_road import no_token_anywhere

pytestmark = pytest.mark.slow

RMS_SEED = Path(__file__).resolve().parent / "data" / "rms_norm_rows.py"
TARGETS = {
    "kernelbot/silu-and-mul-forward-native": "minisglang.layers.activation:SiluAndMul.forward_native",
    "kernelbot/rms-norm-forward-native": "minisglang.layers.layernorm:RMSNorm.forward_native",
}
# The example's benchmark at a size that profiles in seconds: where the time goes, not how fast it is.
TINY_BENCHMARK = ["python", "benchmarks/throughput.py", "--batch", "2", "--steps", "2", "--prompt-len", "4"]


def scan_profile(path: Path, api_url: str) -> Path:
    path.write_text(
        '[profiles.example]\nextends = "example"\n'
        f'[profiles.example.forge]\napi_url = "{api_url}"\n'
        f"[profiles.example.benchmark]\nargv = {json.dumps([*TINY_BENCHMARK, '--warmup', '0'])}\n"
    )
    return path


def push_commit(root: Path, upstream: Path, name: str) -> str:
    """A maintainer's commit on upstream main (the base moves); its sha."""
    clone = root / f"maint-{name}"
    run_git(root, "clone", "--quiet", str(upstream), str(clone))
    (clone / f"{name}.md").write_text(f"{name}\n")
    sha = git.commit_all(clone, f"docs: {name}")
    run_git(clone, "push", "--quiet", "origin", "HEAD:main")
    return sha


def branch_sha(fork: Path, branch: str) -> str:
    return run_git(fork, "--git-dir", str(fork), "rev-parse", f"refs/heads/{branch}").strip()


def topic_comments(fake, number: int, topic: str) -> list[dict]:  # type: ignore[no-untyped-def]
    return [c for c in fake.comments(number) if f"kernelbot-topic:{topic}" in c["body"]]


def test_periodic_scans(tmp_path: Path, capsys: pytest.CaptureFixture[str], github_fake, monkeypatch) -> None:
    upstream, _ = make_upstream(tmp_path)
    fork = git.init_repository(tmp_path / "fork.git", bare=True)
    fake = github_fake(repo=UPSTREAM_REPO, forks={"contributor/minisglang": fork})
    config = scan_profile(tmp_path / "kernelbot.toml", fake.url)
    state = tmp_path / "state"
    monkeypatch.setenv("GITHUB_TOKEN", ACCEPTED_TOKEN)
    args = ["scan", "--profile", "example", "--repo", f"file://{upstream}", "--state-dir", state]
    args += ["--config", config, "--open-pr", "--fork", fork, "--seed", ROWWISE, "--seed", RMS_SEED]
    # Only the seed files: a generated seed (Inductor, fusion) would be traced and judged in each of the three
    # target runs for nothing this test reads.
    args += ["--backend", "triton-interpret", "--workers-per-device", "1", "--no-inductor-seed"]
    args += ["--no-fusion-seed"]
    args += ["--only", "*:SiluAndMul.forward_native", "--only", "*:RMSNorm.forward_native"]

    def scan() -> str:
        code, out, err = kernelbot(capsys, *args)
        assert code == 0, out[-3000:] + err[-3000:]
        return out

    def last_scan() -> dict:  # type: ignore[type-arg]
        return json.loads((state / "last-scan.json").read_text())

    # 1. The first scan, a real process, opens one PR; a second scan meanwhile is refused.
    log_path = tmp_path / "scan1.log"
    with log_path.open("w") as log:
        first = subprocess.Popen(
            [sys.executable, "-m", "kernelbot.cli", *map(str, args)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "GITHUB_TOKEN": ACCEPTED_TOKEN},
        )
        try:
            deadline = time.monotonic() + 120
            while f'"pid": {first.pid}' not in _read(state / "scan.lock"):
                assert first.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.1)
            code, _, err = kernelbot(capsys, *args)
            line = one_error_line(err)
            assert (
                code == 1
                and "another kernelbot scan of https://github.com/kernelbot/minisglang is running" in line
            )
            assert f"pid {first.pid}" in line
            assert first.wait(timeout=900) == 0, log_path.read_text()[-4000:]
        finally:
            if first.poll() is None:
                first.kill()
    first_log = log_path.read_text()
    (pr1,) = fake.pulls()
    first_branch = pr1["head"]["ref"]
    (second_branch,) = set(TARGETS) - {first_branch}
    assert pr1["state"] == "open" and f"new {TARGETS[first_branch]}: opened #1" in first_log
    report = last_scan()
    assert report["ranking"]["source"] == "measured" and "CPU time" in report["ranking"]["note"]
    assert report["regions"][0]["target"] == TARGETS[first_branch]
    run_dir = Path((state / "last-run").read_text().strip())
    assert run_dir == Path(report["runs"][0]["run_dir"]) and (run_dir / "pr" / "patch.diff").is_file()

    # 2. Nothing changed: no PR, and why (the open one fills the one slot); the ranking is not measured again.
    out = scan()
    assert len(fake.pulls()) == 1
    assert "proposed nothing: kernelbot has 1 open PR(s) in this repository (#1)" in out
    assert "(the ranking of this commit from an earlier scan)" in out
    assert f"{TARGETS[first_branch]} [" in out and "proposed: proposed in #1 (open); up to date" in out
    assert "waiting: not proposed now: kernelbot has 1 open PR(s)" in out
    assert last_scan()["runs"] == [] and not (state / "last-run").exists()

    # 3. Upstream merges it: the merged region leaves the queue, the next one is proposed on the new base.
    fake.merge(1)
    run_git(
        tmp_path,
        "--git-dir",
        str(fork),
        "push",
        "--quiet",
        str(upstream),
        f"{pr1['head']['sha']}:refs/heads/main",
    )
    merged_base = pr1["head"]["sha"]
    out = scan()
    pr2 = fake.pull(2)
    assert len(fake.pulls()) == 2 and pr2["head"]["ref"] == second_branch and pr2["state"] == "open"
    assert parse_marker(pr2["body"]).base_sha == merged_base  # type: ignore[union-attr]
    assert (
        "merged: merged in #1: it leaves the queue" in out
        and f"new {TARGETS[second_branch]}: opened #2" in out
    )

    # 4. The ledger is lost: the forge's markers say what is proposed; nothing is duplicated.
    for name in ("ledger.sqlite", "ledger.sqlite-wal", "ledger.sqlite-shm"):
        (state / name).unlink(missing_ok=True)
    out = scan()
    assert len(fake.pulls()) == 2 and "earlier scan" not in out  # measured again: the cache went with it
    assert "merged in #1" in out and "proposed in #2 (open); up to date" in out
    assert "did: proposed nothing: every ranked region is proposed, merged, refused or failed" in out
    assert "(1 merged, 1 proposed)" in out

    # 5. The base moves under the open PR: one fresh commit on the new base, pushed with a lease.
    new_base = push_commit(tmp_path, upstream, "news")
    out = scan()
    head = branch_sha(fork, second_branch)
    assert f"open PR #2: the base moved from {merged_base[:12]} to {new_base[:12]} -> updated #2" in out
    assert run_git(fork, "--git-dir", str(fork), "rev-list", "--count", f"{new_base}..{head}").strip() == "1"
    assert run_git(fork, "--git-dir", str(fork), "rev-parse", f"{head}^").strip() == new_base
    refreshed = fake.pull(2)
    assert parse_marker(refreshed["body"]).base_sha == new_base and refreshed["head"]["sha"] == head  # type: ignore[union-attr]
    assert len(topic_comments(fake, 2, "refresh")) == 1 and len(fake.pulls()) == 2

    # 6. A maintainer pushes a fixup to the branch, and the base moves again: one comment, and hands off.
    fixup = tmp_path / "fixup"
    run_git(tmp_path, "clone", "--quiet", "--branch", second_branch, str(fork), str(fixup))
    (fixup / "FIXUP.md").write_text("a maintainer's touch\n")
    theirs = git.commit_all(fixup, "fixup")
    run_git(fixup, "push", "--quiet", "origin", f"HEAD:{second_branch}")
    push_commit(tmp_path, upstream, "more-news")
    out = scan()
    assert "someone else pushed to" in out and "left alone; comment created" in out
    assert branch_sha(fork, second_branch) == theirs and last_scan()["runs"] == []
    (comment,) = topic_comments(fake, 2, "hands-off")
    assert "will not push to this branch again" in comment["body"]
    out = scan()
    assert "left alone; comment unchanged" in out and len(topic_comments(fake, 2, "hands-off")) == 1
    assert branch_sha(fork, second_branch) == theirs

    # 7. Closed without merging: that region's kernel is never proposed again, and nothing is left to do.
    fake.close(2)
    out = scan()
    assert len(fake.pulls()) == 2 and branch_sha(fork, second_branch) == theirs
    assert "refused: #2 was closed without merging" in out
    assert "did: proposed nothing: every ranked region is proposed, merged, refused or failed" in out
    assert "(1 merged, 1 refused)" in out

    no_token_anywhere(tmp_path)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
