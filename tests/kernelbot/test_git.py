"""kernelbot.git against real repositories in tmp_path: worktrees, patches that apply, pushes with a lease,
unreachable remotes, dirty and detached work trees, hook variables and tokens kept out of git's config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from git_http_fake import GitHttpServer
from git_repos import Repos, run_git

from kernelbot import git
from kernelbot.errors import GitError


def _change(worktree: Path) -> None:
    (worktree / "pkg" / "layers.py").write_text(
        "from pkg.kernels import fused\n\n\ndef silu_and_mul(x):\n    return fused(x)\n"
    )
    (worktree / "pkg" / "kernels.py").write_text("def fused(x):\n    return x\n")
    (worktree / "blob.bin").write_bytes(bytes(range(256)))
    (worktree / "pkg" / "__pycache__").mkdir()
    (worktree / "pkg" / "__pycache__" / "layers.cpython-311.pyc").write_bytes(b"\x00junk")


def test_repo_root_head_and_resolve(repos: Repos) -> None:
    assert git.repo_root(repos.checkout / "pkg") == repos.checkout.resolve()
    assert git.head_commit(repos.checkout) == repos.base_sha
    assert git.resolve_commit(repos.checkout, "main") == repos.base_sha
    with pytest.raises(GitError, match="is not a commit"):
        git.resolve_commit(repos.checkout, "no-such-branch")


def test_not_a_repository_says_so(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not inside a git repository"):
        git.repo_root(tmp_path)
    with pytest.raises(GitError, match="does not exist"):
        git.head_commit(tmp_path / "missing")
    empty = git.init_repository(tmp_path / "empty")
    with pytest.raises(GitError, match="no commits yet"):
        git.head_commit(empty)


def test_dirty_and_detached_detection(repos: Repos) -> None:
    assert not git.is_dirty(repos.checkout)
    assert not git.is_detached(repos.checkout)
    assert git.current_branch(repos.checkout) == "main"
    (repos.checkout / "notes.txt").write_text("untracked\n")
    (repos.checkout / "README.md").write_text("# edited\n")
    assert sorted(git.dirty_paths(repos.checkout)) == ["README.md", "notes.txt"]
    run_git(repos.checkout, "checkout", "--quiet", "--", "README.md")
    (repos.checkout / "notes.txt").unlink()
    # Test junk never makes a tree dirty: running the repo's tests must not block a proposal.
    (repos.checkout / "pkg" / "__pycache__").mkdir()
    (repos.checkout / "pkg" / "__pycache__" / "x.pyc").write_bytes(b"\x00")
    assert not git.is_dirty(repos.checkout)
    run_git(repos.checkout, "checkout", "--quiet", "--detach", "HEAD")
    assert git.is_detached(repos.checkout)
    assert git.current_branch(repos.checkout) is None


def test_worktree_at_a_commit_and_a_patch_that_applies_on_the_base(repos: Repos, tmp_path: Path) -> None:
    (repos.checkout / "README.md").write_text("# moved on\n")
    later = git.commit_all(repos.checkout, "a later commit")
    tree = git.add_worktree(repos.checkout, tmp_path / "wt", repos.base_sha)
    assert git.head_commit(tree) == repos.base_sha
    assert (tree / "README.md").read_text() == "# upstream\n"
    assert git.is_detached(tree)
    _change(tree)
    patch = git.diff_against(tree, repos.base_sha)
    assert patch.endswith("\n")
    assert "pkg/kernels.py" in patch and "blob.bin" in patch
    assert "__pycache__" not in patch
    assert git.dirty_paths(tree)  # the real index was not touched by the throwaway one
    assert run_git(tree, "diff", "--cached", "--name-only") == ""

    # The patch applies on a fresh checkout of the base and reproduces the files exactly.
    fresh = tmp_path / "fresh"
    run_git(tmp_path, "clone", "--quiet", str(repos.upstream), str(fresh))
    run_git(fresh, "checkout", "--quiet", repos.base_sha)
    (fresh / "change.diff").write_text(patch)
    run_git(fresh, "apply", "--check", "change.diff")
    run_git(fresh, "apply", "change.diff")
    for name in ("pkg/layers.py", "pkg/kernels.py", "blob.bin"):
        assert (fresh / name).read_bytes() == (tree / name).read_bytes()

    git.remove_worktree(repos.checkout, tree)
    assert not tree.exists()
    assert git.head_commit(repos.checkout) == later


def test_commit_all_uses_the_bot_identity_and_refuses_an_empty_change(repos: Repos, tmp_path: Path) -> None:
    tree = git.add_worktree(repos.checkout, tmp_path / "wt", repos.base_sha)
    _change(tree)
    sha = git.commit_all(tree, "pkg: a fused kernel")
    assert git.head_commit(tree) == sha
    author = run_git(tree, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s").strip()
    bot = "kernelbot <kernelbot@users.noreply.github.com>"
    assert author == f"{bot}|{bot}|pkg: a fused kernel"
    assert "pyc" not in run_git(tree, "show", "--name-only", "--format=", sha)
    with pytest.raises(GitError, match="nothing to commit"):
        git.commit_all(tree, "again")


def test_push_with_lease_to_a_bare_fork_and_a_rejected_lease(repos: Repos, tmp_path: Path) -> None:
    tree = git.add_worktree(repos.checkout, tmp_path / "wt", repos.base_sha)
    _change(tree)
    first = git.commit_all(tree, "first kernel")
    branch = "kernelbot/silu-and-mul"
    assert git.remote_branch_sha(str(repos.fork), branch) is None
    assert git.push_with_lease(tree, str(repos.fork), branch, None) == first
    assert git.remote_branch_sha(str(repos.fork), branch) == first

    # Pushing what is already there is a no-op; "must not exist" refuses anything else once it is there.
    assert git.push_with_lease(tree, str(repos.fork), branch, first) == first
    (tree / "pkg" / "kernels.py").write_text("def fused(x):\n    return x + 0\n")
    git.commit_all(tree, "another kernel")
    with pytest.raises(git.LeaseRejected, match="expected the branch absent"):
        git.push_with_lease(tree, str(repos.fork), branch, None)
    assert git.remote_branch_sha(str(repos.fork), branch) == first

    # Someone else pushes to the branch; a push expecting our old sha is refused and changes nothing.
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "--quiet", str(repos.fork), str(other), "--branch", branch)
    (other / "theirs.txt").write_text("a maintainer's fixup\n")
    run_git(other, "add", "theirs.txt")
    run_git(other, "-c", "user.name=m", "-c", "user.email=m@x", "commit", "--quiet", "-m", "fixup")
    run_git(other, "push", "--quiet", "origin", branch)
    theirs = git.remote_branch_sha(str(repos.fork), branch)
    (tree / "pkg" / "kernels.py").write_text("def fused(x):\n    return x * 1\n")
    second = git.commit_all(tree, "second kernel")
    with pytest.raises(git.LeaseRejected, match="someone else has pushed"):
        git.push_with_lease(tree, str(repos.fork), branch, first)
    assert git.remote_branch_sha(str(repos.fork), branch) == theirs

    # With the lease naming what is there now, the force push replaces it.
    assert git.push_with_lease(tree, str(repos.fork), branch, theirs) == second
    assert git.remote_branch_sha(str(repos.fork), branch) == second


def test_push_through_a_named_remote(repos: Repos) -> None:
    git.ensure_remote(repos.checkout, "fork", str(repos.fork))
    git.ensure_remote(repos.checkout, "fork", str(repos.fork))  # idempotent
    assert git.remote_url(repos.checkout, "fork") == str(repos.fork)
    git.push_with_lease(repos.checkout, "fork", "kernelbot/x", None)
    assert git.remote_branch_sha("fork", "kernelbot/x", repo=repos.checkout) == repos.base_sha


def test_unreachable_remote_is_a_clear_error(repos: Repos, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.git"
    message = r"cannot reach the git remote .*nowhere\.git.*check the URL"
    with pytest.raises(git.RemoteUnreachable, match=message):
        git.remote_branch_sha(str(missing), "main")
    with pytest.raises(git.RemoteUnreachable, match="is a git repository"):
        git.push_with_lease(repos.checkout, str(missing), "kernelbot/x", None)
    not_a_repo = tmp_path / "plain"
    not_a_repo.mkdir()
    with pytest.raises(git.RemoteUnreachable):
        git.clone(str(not_a_repo), tmp_path / "dest")
    # A closed local port stands in for a host that does not answer.
    with pytest.raises(git.RemoteUnreachable, match=r"127\.0\.0\.1:9"):
        git.remote_branch_sha("http://127.0.0.1:9/me/repo.git", "main")


def test_a_token_in_a_remote_url_is_refused_and_never_echoed(repos: Repos) -> None:
    url = "https://someone:ghp_secretsecret@github.com/me/repo.git"
    with pytest.raises(GitError) as info:
        git.ensure_remote(repos.checkout, "fork", url)
    assert "ghp_secretsecret" not in str(info.value)
    assert "https://github.com/me/repo.git" in str(info.value)


def test_the_token_reaches_git_only_through_the_credential_helper(
    repos: Repos, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghp_onlyInTheEnvironment42"
    monkeypatch.setenv("KB_TEST_TOKEN", token)
    env = git.credential_env("https://github.com/me/repo.git", "KB_TEST_TOKEN")
    assert token not in "".join(v for k, v in env.items() if k.startswith("GIT_"))
    filled = subprocess.run(
        ["git", "credential", "fill"],
        input="protocol=https\nhost=github.com\npath=me/repo.git\n\n",
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
        cwd=repos.checkout,
    ).stdout
    assert f"password={token}" in filled.splitlines()
    assert "username=x-access-token" in filled.splitlines()
    # Local paths and ssh URLs get no helper; nothing is set when there is no token.
    no_helper = {"GIT_TERMINAL_PROMPT": "0"}
    assert git.credential_env(str(repos.fork), "KB_TEST_TOKEN") == no_helper
    assert git.credential_env("https://github.com/me/repo.git", "KB_UNSET_TOKEN") == no_helper
    # A push with a token configured leaves nothing of it in the repository's config.
    git.push_with_lease(repos.checkout, str(repos.fork), "kernelbot/x", None, token_env="KB_TEST_TOKEN")
    assert token not in (repos.checkout / ".git" / "config").read_text()


def test_variables_leaked_from_a_git_hook_are_ignored(
    repos: Repos, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = git.init_repository(tmp_path / "decoy")
    (decoy / "f").write_text("x")
    git.commit_all(decoy, "decoy")
    # What a pre-commit hook in another repository would export.
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))
    monkeypatch.setenv("GIT_INDEX_FILE", str(decoy / ".git" / "index"))
    assert git.head_commit(repos.checkout) == repos.base_sha
    assert git.repo_root(repos.checkout) == repos.checkout.resolve()
    assert not git.is_dirty(repos.checkout)
    assert os.environ["GIT_DIR"] == str(decoy / ".git")  # restored for the rest of the process


def test_a_push_over_http_authenticates_with_the_token_from_the_environment(
    repos: Repos, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghp_pushTokenOverHttp0042"
    served = tmp_path / "served"
    served.mkdir()
    run_git(tmp_path, "clone", "--quiet", "--bare", str(repos.upstream), str(served / "fork.git"))
    run_git(served / "fork.git", "config", "http.receivepack", "true")
    monkeypatch.setenv("KB_PUSH_TOKEN", token)
    with GitHttpServer(root=served, token=token) as server:
        url = server.url_for("fork.git")
        git.ensure_remote(repos.checkout, "fork", url)
        pushed = git.push_with_lease(repos.checkout, "fork", "kernelbot/x", None, token_env="KB_PUSH_TOKEN")
        assert git.remote_branch_sha(url, "kernelbot/x", token_env="KB_PUSH_TOKEN") == pushed
        assert server.authorised and server.refused  # git asked, was refused, then used the helper's token
        monkeypatch.delenv("KB_PUSH_TOKEN")
        with pytest.raises(git.RemoteUnreachable, match=r"\$KB_PUSH_TOKEN holds a token .*\(it is not set\)"):
            git.remote_branch_sha(url, "kernelbot/x", token_env="KB_PUSH_TOKEN")
    for path in (repos.checkout / ".git" / "config", served / "fork.git" / "config"):
        assert token not in path.read_text()
