"""The scan's repository against real git repositories: a clone kept and fetched at every scan (so the
base follows upstream), the bundled example committed once, a local checkout used in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelbot import git
from kernelbot.engines import load_profile
from kernelbot.errors import GitError
from kernelbot.scan.checkout import prepare_scan_repo, scan_source
from tests.kernelbot.git_repos import make_repos, run_git


def test_a_remote_is_cloned_once_then_fetched(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    profile = load_profile("example")
    state = tmp_path / "state"
    first = prepare_scan_repo(f"file://{repos.upstream}", profile, state)
    assert first.path == state / "upstream" and first.base_sha == repos.base_sha and first.fetched
    # Upstream moves on; a run's work tree of the old base lives on in the kept clone.
    tree = git.add_worktree(first.path, tmp_path / "run-tree", first.base_sha)
    (repos.checkout / "NEWS").write_text("moved\n")
    moved = git.commit_all(repos.checkout, "news")
    run_git(repos.checkout, "push", "--quiet", "origin", "main")
    second = prepare_scan_repo(f"file://{repos.upstream}", profile, state)
    assert second.path == first.path and second.base_sha == moved and second.branch == "main"
    assert git.head_commit(tree) == repos.base_sha and not git.is_dirty(second.path)


def test_the_example_is_committed_once(tmp_path: Path) -> None:
    profile = load_profile("example")
    source = scan_source(None, profile)
    assert source == "example"
    first = prepare_scan_repo(source, profile, tmp_path / "state")
    again = prepare_scan_repo(source, profile, tmp_path / "state")
    assert first.base_sha == again.base_sha and not first.fetched
    assert (first.path / "minisglang" / "layers" / "activation.py").is_file()


def test_a_local_checkout_is_used_in_place_and_must_be_clean(tmp_path: Path) -> None:
    repos = make_repos(tmp_path)
    profile = load_profile("example")
    used = prepare_scan_repo(str(repos.checkout), profile, tmp_path / "state")
    assert used.path == repos.checkout.resolve() and used.base_sha == repos.base_sha
    assert not (tmp_path / "state" / "upstream").exists()
    (repos.checkout / "README.md").write_text("edited\n")
    with pytest.raises(GitError, match="uncommitted changes"):
        prepare_scan_repo(str(repos.checkout), profile, tmp_path / "state")
