"""write_bundle: RUN/pr/ holds a patch that applies on the base, the body, the evidence and a reproduce.sh
that really re-applies the patch on a fresh clone and re-runs the tests; secrets and empty changes refused."""

from __future__ import annotations

import dataclasses
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from git_repos import Repos
from proposal_fixtures import ProfileStandIn

from kernelbot import git
from kernelbot.errors import RunStateError
from kernelbot.forge import parse_marker
from kernelbot.propose import Evidence, SecretInBundle, load_bundle, write_bundle
from kernelbot.propose.evidence import RepoEvidence

NEW_TEST = "from pkg.layers import silu_and_mul\n\n\ndef test_identity():\n    assert silu_and_mul(3) == 3\n"


def _change(repos: Repos, tmp_path: Path) -> str:
    tree = git.add_worktree(repos.checkout, tmp_path / "change", repos.base_sha)
    (tree / "tests").mkdir()
    (tree / "tests" / "test_new.py").write_text(NEW_TEST)
    (tree / "pkg" / "layers.py").write_text("def silu_and_mul(x):\n    # fused\n    return x\n")
    return git.diff_against(tree, repos.base_sha)


def _evidence_on(repos: Repos, evidence: Evidence) -> Evidence:
    command = ("python", "-m", "pytest", "-q", "tests/test_new.py")
    tests = dataclasses.replace(evidence.tests, command=command, files=("tests/test_new.py",))
    return dataclasses.replace(
        evidence,
        repo=RepoEvidence(url=str(repos.upstream), base_sha=repos.base_sha, branch="main"),
        tests=tests,
        modifications=dataclasses.replace(evidence.modifications, test_file="tests/test_new.py"),
    )


def test_the_bundle_files(cpu_evidence: Evidence, repos: Repos, tmp_path: Path) -> None:
    evidence = _evidence_on(repos, cpu_evidence)
    run = tmp_path / "run"
    bundle = write_bundle(run, evidence, ProfileStandIn(), _change(repos, tmp_path))
    out = run / "pr"
    assert sorted(p.name for p in out.iterdir()) == ["body.md", "evidence.json", "patch.diff", "reproduce.sh"]
    assert Evidence.from_json((out / "evidence.json").read_text()) == evidence
    assert (out / "body.md").read_text() == bundle.body and parse_marker(bundle.body) == bundle.marker
    assert bundle.branch == "kernelbot/silu-and-mul-forward-native"
    assert os.stat(out / "reproduce.sh").st_mode & stat.S_IXUSR
    # Every line of the script's header is a comment of its own.
    header = (out / "reproduce.sh").read_text().split("\nset -euo pipefail", 1)[0].splitlines()
    assert all(line.startswith("#") and "# " not in line[1:].replace("#!/", "") for line in header), header
    assert load_bundle(run) == bundle

    # The patch applies on the base commit of a fresh clone.
    fresh = tmp_path / "fresh"
    git.clone(str(repos.upstream), fresh)
    subprocess.run(["git", "apply", "--check", str(out / "patch.diff")], cwd=fresh, check=True)


def test_reproduce_sh_reapplies_the_patch_and_reruns_the_tests(
    cpu_evidence: Evidence, repos: Repos, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    write_bundle(run, _evidence_on(repos, cpu_evidence), ProfileStandIn(), _change(repos, tmp_path))
    script = run / "pr" / "reproduce.sh"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"patch.diff applied on {repos.base_sha}" in done.stdout
    assert "1 passed" in done.stdout

    # A checkout given on the command line is used, and refused when it is not clean.
    mine = tmp_path / "mine"
    git.clone(str(repos.upstream), mine)
    (mine / "stray.txt").write_text("local work\n")
    dirty = subprocess.run(
        ["bash", str(script), str(mine)], env=env, capture_output=True, text=True, timeout=300
    )
    assert dirty.returncode == 1 and "has uncommitted changes" in dirty.stderr


def test_a_broken_patch_makes_reproduce_sh_fail(cpu_evidence: Evidence, repos: Repos, tmp_path: Path) -> None:
    patch = _change(repos, tmp_path).replace("return x\n", "return y\n", 1)
    run = tmp_path / "run"
    write_bundle(run, _evidence_on(repos, cpu_evidence), ProfileStandIn(), patch)
    done = subprocess.run(
        ["bash", str(run / "pr" / "reproduce.sh")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0 and "patch" in done.stderr


def test_an_empty_change_is_refused(cpu_evidence: Evidence, tmp_path: Path) -> None:
    with pytest.raises(RunStateError, match="the change is empty"):
        write_bundle(tmp_path, cpu_evidence, ProfileStandIn(), "  \n")
    assert not (tmp_path / "pr").exists()


def test_a_secret_from_the_environment_is_never_written(
    cpu_evidence: Evidence, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_leakedLeakedLeaked")
    leaky = dataclasses.replace(cpu_evidence, reproduce="curl -H 'token ghp_leakedLeakedLeaked' x")
    with pytest.raises(SecretInBundle, match=r"value of \$GITHUB_TOKEN") as info:
        write_bundle(tmp_path, leaky, ProfileStandIn(), "diff --git a/x b/x\n")
    assert "ghp_leaked" not in str(info.value)
    assert not (tmp_path / "pr").exists()
    monkeypatch.setenv("KB_OTHER_TOKEN", "sekrit-sekrit-123")
    with pytest.raises(SecretInBundle, match=r"patch\.diff would contain the value of \$KB_OTHER_TOKEN"):
        write_bundle(
            tmp_path, cpu_evidence, ProfileStandIn(), "+sekrit-sekrit-123\n", secret_envs=["KB_OTHER_TOKEN"]
        )


def test_a_bundle_whose_body_lost_its_marker_is_not_loaded(cpu_evidence: Evidence, tmp_path: Path) -> None:
    write_bundle(tmp_path, cpu_evidence, ProfileStandIn(), "diff --git a/x b/x\n")
    (tmp_path / "pr" / "body.md").write_text("edited by hand\n")
    with pytest.raises(RunStateError, match="lost its kernelbot marker"):
        load_bundle(tmp_path)


def test_a_bundle_needs_no_github_client() -> None:
    """Writing a bundle (no --open-pr) reads the PR marker only: PyGithub, which only opening a pull request
    needs, may be missing (a GPU image without it), and the propose stage still imports."""
    code = (
        "import sys; sys.modules['github'] = None\n"
        "import kernelbot.propose, kernelbot.target.proposal\n"
        "from kernelbot.forge import parse_marker\n"
        "try:\n"
        "    from kernelbot.forge import GitHubForge\n"
        "except ImportError:\n"
        "    print('no client')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "no client"  # asked for, the client's absence still says so
