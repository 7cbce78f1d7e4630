"""Pushing a proposal's branch with force-with-lease, so that kernelbot never overwrites a push it has not
seen."""

from __future__ import annotations

from pathlib import Path

from kernelbot.errors import GitError
from kernelbot.git.env import credential_env, redact_url, refuse_credentials
from kernelbot.git.plumbing import git_error, gitpython, looks_unreachable, open_repo, unreachable


class LeaseRejected(GitError):
    """Raised when a push with force-with-lease finds the remote branch somewhere other than expected."""


def push_with_lease(
    worktree: Path,
    remote: str,
    branch: str,
    expected_remote_sha: str | None,
    *,
    commit: str = "HEAD",
    token_env: str | None = None,
) -> str:
    """Push `commit` to `branch` on `remote` (URL, path or remote name), forcing only if the remote branch
    is still at `expected_remote_sha` (None: it must not exist yet). Returns the sha pushed."""
    ref = f"refs/heads/{branch}"
    with open_repo(worktree) as repo:
        url = next((r.url for r in repo.remotes if r.name == remote), remote)
        refuse_credentials(url)
        try:
            sha = repo.commit(commit).hexsha
        except (gitpython.BadName, ValueError):
            raise GitError(f"{commit!r} is not a commit of {worktree}: nothing to push") from None
        lease = f"--force-with-lease={ref}:{expected_remote_sha or ''}"
        try:
            repo.git.push("--porcelain", lease, remote, f"{sha}:{ref}", env=credential_env(url, token_env))
        except gitpython.GitCommandError as exc:
            text = f"{exc.stdout or ''}\n{exc.stderr or ''}"
            if "stale info" in text or "[rejected]" in text:
                where = f"at {expected_remote_sha[:12]}" if expected_remote_sha else "absent"
                raise LeaseRejected(
                    f"pushing {branch} to {redact_url(url)} was refused: kernelbot expected the branch "
                    f"{where}, but someone else has pushed to it; look at that branch before proposing again"
                ) from exc
            if looks_unreachable(exc):
                raise unreachable(url, exc, token_env) from exc
            doing = f"git push {branch} to {redact_url(url)}"
            raise git_error(exc, doing, "may this remote be pushed to?") from exc
    return sha
