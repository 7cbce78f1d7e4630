"""Remotes: naming them in a repository, reading a branch's sha on one, cloning and fetching. Tokens
reach git only through kernelbot.git.env's credential helper, and URLs are redacted in every message."""

from __future__ import annotations

from pathlib import Path

from kernelbot.git.env import credential_env, hook_variables_hidden, redact_url, refuse_credentials
from kernelbot.git.plumbing import (
    git_error,
    gitpython,
    looks_unreachable,
    open_repo,
    require_gitpython,
    unreachable,
)


def ensure_remote(repo_path: Path, name: str, url: str) -> None:
    """Make remote `name` point at `url` (added if missing, re-pointed if it differs)."""
    refuse_credentials(url)
    with open_repo(repo_path) as repo:
        try:
            if name in [r.name for r in repo.remotes]:
                if repo.remotes[name].url != url:
                    repo.git.remote("set-url", name, url)
            else:
                repo.git.remote("add", name, url)
        except gitpython.GitCommandError as exc:
            doing = f"setting remote {name} to {redact_url(url)}"
            raise git_error(exc, doing, "is the name a valid remote name?") from exc


def remote_url(repo_path: Path, remote: str) -> str:
    """The URL of a remote name, or `remote` itself when it already is a URL or path."""
    with open_repo(repo_path) as repo:
        names = {r.name: r for r in repo.remotes}
        return names[remote].url if remote in names else remote


def remote_branch_sha(
    remote: str, branch: str, *, repo: Path | None = None, token_env: str | None = None
) -> str | None:
    """The sha of `branch` on `remote` (a URL, a path, or a remote name of `repo`), None if absent."""
    require_gitpython()
    url = remote_url(repo, remote) if repo is not None else remote
    refuse_credentials(url)
    with hook_variables_hidden():
        runner = gitpython.Git(str(repo) if repo is not None else None)
        try:
            env = credential_env(url, token_env)
            out = runner.ls_remote("--heads", remote, f"refs/heads/{branch}", env=env)
        except gitpython.GitCommandError as exc:
            raise unreachable(url, exc, token_env) from exc
    assert isinstance(out, str)  # GitPython returns text unless asked for bytes or a running process
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.strip() == f"refs/heads/{branch}":
            return sha.strip()
    return None


def clone(url: str, dest: Path, *, bare: bool = False, token_env: str | None = None) -> Path:
    """Clone `url` into `dest`."""
    require_gitpython()
    refuse_credentials(url)
    args = ["--quiet", *(["--bare"] if bare else []), url, str(dest)]
    with hook_variables_hidden():
        try:
            gitpython.Git().clone(*args, env=credential_env(url, token_env))
        except gitpython.GitCommandError as exc:
            if looks_unreachable(exc):
                raise unreachable(url, exc, token_env) from exc
            raise git_error(exc, f"git clone {redact_url(url)}", f"is {dest} an empty directory?") from exc
    return dest


def fetch(repo_path: Path, remote: str = "origin", *, token_env: str | None = None) -> None:
    """Bring `remote`'s branches into `repo_path`'s remote-tracking refs (pruning deleted ones)."""
    with open_repo(repo_path) as repo:
        url = next((r.url for r in repo.remotes if r.name == remote), remote)
        refuse_credentials(url)
        try:
            repo.git.fetch("--quiet", "--prune", remote, env=credential_env(url, token_env))
        except gitpython.GitCommandError as exc:
            if looks_unreachable(exc):
                raise unreachable(url, exc, token_env) from exc
            raise git_error(exc, f"git fetch {redact_url(url)}", "is the remote a git repository?") from exc
