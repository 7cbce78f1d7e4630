"""Every git operation kernelbot performs, as a named function over GitPython.

Callers never build git command lines and no other module imports `git`. Each low-level failure becomes a
`GitError` that says what to check; the two a user meets most have their own classes:

    GitError
     ├── RemoteUnreachable   the remote could not be read or written (wrong URL, not a repository, no network,
     │                       no access)
     └── LeaseRejected       force-with-lease refused: the remote branch is not where kernelbot last saw it

Two habits keep git honest here. Variables a git hook exports (GIT_DIR, GIT_INDEX_FILE, ...) are removed
for the duration of every operation, so kernelbot run from a hook works on the repository it was given,
not on the hook's. And a token never enters a URL, .git/config or a log line: an HTTPS push or fetch that
needs one gets it through a credential helper configured in the environment of that one git process, which
reads the token from the environment too (both in kernelbot.git_env).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kernelbot.errors import GitError
from kernelbot.git_env import (  # credential_env and redact_url are part of this module's surface
    config_env,
    credential_env,
    hook_variables_hidden,
    redact_text,
    redact_url,
    refuse_credentials,
)

try:
    import git as gitpython
except ImportError as _exc:  # GitPython refuses to import when no git executable is found
    gitpython = None  # type: ignore[assignment]
    _IMPORT_PROBLEM = str(_exc).splitlines()[0] if str(_exc) else "git not found"


class RemoteUnreachable(GitError):
    """Raised when a remote cannot be listed, fetched from or pushed to."""


class LeaseRejected(GitError):
    """Raised when a push with force-with-lease finds the remote branch somewhere other than expected."""


@dataclass(frozen=True)
class Identity:
    """Who a commit is attributed to (author and committer)."""

    name: str
    email: str


BOT_IDENTITY = Identity("kernelbot", "kernelbot@users.noreply.github.com")

# Junk that running a repo's tests leaves in a worktree; never part of a proposal, whether or not the repo's
# .gitignore lists it (the bundled minirepo has none).
JUNK_PATHSPECS = (
    ":(exclude,glob)**/__pycache__/**",
    ":(exclude,glob)**/*.pyc",
    ":(exclude,glob)**/.pytest_cache/**",
    ":(exclude,glob)**/*.egg-info/**",
)

_UNREACHABLE_SIGNS = (
    "could not read from remote repository",
    "does not appear to be a git repository",
    "repository not found",
    "could not resolve host",
    "unable to access",
    "connection refused",
    "connection timed out",
    "authentication failed",
    "could not read username",
    "not found",
    "does not exist",
    "permission denied",
)

# --- plumbing ------------------------------------------------------------------------------------------


def _require_gitpython() -> None:
    if gitpython is None:
        raise GitError(f"git is not usable here ({_IMPORT_PROBLEM}): install git and make sure it is on PATH")


@contextlib.contextmanager
def _open(path: Path, *, search_parents: bool = False) -> Iterator[gitpython.Repo]:
    _require_gitpython()
    with hook_variables_hidden():
        try:
            repo = gitpython.Repo(path, search_parent_directories=search_parents)
        except gitpython.NoSuchPathError:
            raise GitError(f"{path} does not exist: check the repository path") from None
        except gitpython.InvalidGitRepositoryError:
            raise GitError(
                f"{path} is not inside a git repository: check the path, or run `git init` there"
            ) from None
        try:
            yield repo
        finally:
            repo.close()


def _git_error(exc: gitpython.GitCommandError, doing: str, check: str) -> GitError:
    detail = _first_problem(exc)
    return GitError(f"{doing} failed ({detail}): {check}")


def _first_problem(exc: gitpython.GitCommandError) -> str:
    text = f"{exc.stderr or ''}\n{exc.stdout or ''}"
    lines = []
    for raw in text.splitlines():
        line = re.sub(r"^\s*(stderr|stdout):\s*", "", raw).strip().strip("'").strip()
        if line:
            lines.append(line)
    for line in lines:
        if line.lower().startswith(("fatal:", "error:")):
            return redact_text(line)
    return redact_text(lines[0]) if lines else f"git exited with {exc.status}"


def _looks_unreachable(exc: gitpython.GitCommandError) -> bool:
    text = f"{exc.stderr or ''}\n{exc.stdout or ''}".lower()
    return any(sign in text for sign in _UNREACHABLE_SIGNS)


def _unreachable(remote: str, exc: gitpython.GitCommandError, token_env: str | None) -> RemoteUnreachable:
    if not token_env:
        access = "that you have access to it"
    elif os.environ.get(token_env):
        access = f"that the token in ${token_env} may use it"
    else:
        access = f"that ${token_env} holds a token that may use it (it is not set)"
    return RemoteUnreachable(
        f"cannot reach the git remote {redact_url(remote)} ({_first_problem(exc)}): check the URL or path, "
        f"that it is a git repository, the network, and {access}"
    )


# --- local repositories --------------------------------------------------------------------------------


def repo_root(path: Path) -> Path:
    """The top directory of the work tree `path` lies in."""
    with _open(path, search_parents=True) as repo:
        if repo.bare or repo.working_tree_dir is None:
            raise GitError(f"{path} is a bare repository: kernelbot needs a checkout with a work tree")
        return Path(repo.working_tree_dir).resolve()


def head_commit(repo_path: Path) -> str:
    """The full sha HEAD points at."""
    with _open(repo_path) as repo:
        try:
            return repo.head.commit.hexsha
        except ValueError:
            raise GitError(f"{repo_path} has no commits yet: commit something first") from None


def resolve_commit(repo_path: Path, rev: str) -> str:
    """The full sha of `rev` (a sha, tag or branch) in the repository."""
    with _open(repo_path) as repo:
        try:
            return repo.commit(rev).hexsha
        except (gitpython.BadName, ValueError, gitpython.GitCommandError):
            raise GitError(
                f"{rev!r} is not a commit of {repo_path}: check the sha, tag or branch name"
            ) from None


def current_branch(repo_path: Path) -> str | None:
    """The checked-out branch, or None on a detached HEAD."""
    with _open(repo_path) as repo:
        return None if repo.head.is_detached else repo.active_branch.name


def is_detached(repo_path: Path) -> bool:
    with _open(repo_path) as repo:
        return repo.head.is_detached


def dirty_paths(repo_path: Path) -> list[str]:
    """Paths with uncommitted changes, untracked files included (empty for a clean work tree)."""
    with _open(repo_path) as repo:
        try:
            out = repo.git.status("--porcelain", "--untracked-files=all", "--", ".", *JUNK_PATHSPECS)
        except gitpython.GitCommandError as exc:
            raise _git_error(exc, f"git status in {repo_path}", "is the repository intact?") from exc
    return [line[3:] for line in out.splitlines() if line.strip()]


def is_dirty(repo_path: Path) -> bool:
    return bool(dirty_paths(repo_path))


def init_repository(path: Path, *, bare: bool = False, initial_branch: str = "main") -> Path:
    """A new repository at `path` (created if needed)."""
    _require_gitpython()
    path.mkdir(parents=True, exist_ok=True)
    with hook_variables_hidden():
        try:
            gitpython.Repo.init(path, bare=bare, initial_branch=initial_branch).close()
        except gitpython.GitCommandError as exc:
            raise _git_error(exc, f"git init {path}", "is the directory writable?") from exc
    return path


# --- worktrees -----------------------------------------------------------------------------------------


def add_worktree(repo_path: Path, path: Path, commit: str) -> Path:
    """A new work tree of `repo_path` at `path`, checked out at `commit` on a detached HEAD."""
    with _open(repo_path) as repo:
        try:
            repo.git.worktree("add", "--detach", str(path), commit)
        except gitpython.GitCommandError as exc:
            raise _git_error(
                exc, f"git worktree add {path} at {commit}", "does the commit exist and is the path free?"
            ) from exc
    return path


def remove_worktree(repo_path: Path, path: Path) -> None:
    """Remove the work tree at `path` (changes in it are discarded) and forget it."""
    with _open(repo_path) as repo:
        try:
            if path.exists():
                repo.git.worktree("remove", "--force", str(path))
            repo.git.worktree("prune")
        except gitpython.GitCommandError as exc:
            check = "is it a work tree of this repository?"
            raise _git_error(exc, f"git worktree remove {path}", check) from exc


# --- changes -------------------------------------------------------------------------------------------


def diff_against(worktree: Path, base: str) -> str:
    """The work tree's state (untracked files included, junk excluded) as a patch that `git apply`s on
    `base`. The real index is left alone: the files are staged into a throwaway index."""
    with _open(worktree) as repo, tempfile.TemporaryDirectory(prefix="kernelbot-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        try:
            repo.git.read_tree(base, env=env)
            repo.git.add("--all", "--", ".", *JUNK_PATHSPECS, env=env)
            options = ("--cached", "--binary", "--no-color", "--no-ext-diff")
            return repo.git.diff(*options, base, env=env, strip_newline_in_stdout=False)
        except gitpython.GitCommandError as exc:
            check = "is the base commit in this repository?"
            raise _git_error(exc, f"diff of {worktree} against {base}", check) from exc


def apply_patch(worktree: Path, patch: str) -> None:
    """Apply a patch (as diff_against writes it) to the work tree's files; nothing is changed when any
    part of it does not apply."""
    with _open(worktree) as repo, tempfile.TemporaryDirectory(prefix="kernelbot-patch-") as tmp:
        path = Path(tmp) / "change.diff"
        path.write_text(patch)
        try:
            repo.git.apply("--whitespace=nowarn", str(path))
        except gitpython.GitCommandError as exc:
            check = "was the patch made against this work tree's commit?"
            raise _git_error(exc, f"applying a patch in {worktree}", check) from exc


def commit_all(
    worktree: Path, message: str, *, identity: Identity = BOT_IDENTITY, date: str | None = None
) -> str:
    """Stage everything (junk excluded) and commit it as `identity`; returns the new commit's sha. The
    repository's own hooks are not run (kernelbot formats the files itself) and no signing is asked for.

    With `date` (git's date format, e.g. "2000-01-01T00:00:00+00:00") the commit is authored and committed
    at that time: the same tree, parents, message and identity then always give the same sha."""
    env = {
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
        **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}),
        **config_env({"commit.gpgsign": "false"}),
    }
    with _open(worktree) as repo:
        try:
            repo.git.add("--all", "--", ".", *JUNK_PATHSPECS)
            if not repo.git.status("--porcelain", "--untracked-files=no"):
                raise GitError(f"nothing to commit in {worktree}: the change is empty")
            repo.git.commit("--no-verify", "--quiet", "-m", message, env=env)
            return repo.head.commit.hexsha
        except gitpython.GitCommandError as exc:
            raise _git_error(exc, f"git commit in {worktree}", "is the work tree writable?") from exc


# --- remotes -------------------------------------------------------------------------------------------


def ensure_remote(repo_path: Path, name: str, url: str) -> None:
    """Make remote `name` point at `url` (added if missing, re-pointed if it differs)."""
    refuse_credentials(url)
    with _open(repo_path) as repo:
        try:
            if name in [r.name for r in repo.remotes]:
                if repo.remotes[name].url != url:
                    repo.git.remote("set-url", name, url)
            else:
                repo.git.remote("add", name, url)
        except gitpython.GitCommandError as exc:
            doing = f"setting remote {name} to {redact_url(url)}"
            raise _git_error(exc, doing, "is the name a valid remote name?") from exc


def remote_url(repo_path: Path, remote: str) -> str:
    """The URL of a remote name, or `remote` itself when it already is a URL or path."""
    with _open(repo_path) as repo:
        names = {r.name: r for r in repo.remotes}
        return names[remote].url if remote in names else remote


def remote_branch_sha(
    remote: str, branch: str, *, repo: Path | None = None, token_env: str | None = None
) -> str | None:
    """The sha of `branch` on `remote` (a URL, a path, or a remote name of `repo`), None if absent."""
    _require_gitpython()
    url = remote_url(repo, remote) if repo is not None else remote
    refuse_credentials(url)
    with hook_variables_hidden():
        runner = gitpython.Git(str(repo) if repo is not None else None)
        try:
            env = credential_env(url, token_env)
            out = runner.ls_remote("--heads", remote, f"refs/heads/{branch}", env=env)
        except gitpython.GitCommandError as exc:
            raise _unreachable(url, exc, token_env) from exc
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.strip() == f"refs/heads/{branch}":
            return sha.strip()
    return None


def clone(url: str, dest: Path, *, bare: bool = False, token_env: str | None = None) -> Path:
    """Clone `url` into `dest`."""
    _require_gitpython()
    refuse_credentials(url)
    args = ["--quiet", *(["--bare"] if bare else []), url, str(dest)]
    with hook_variables_hidden():
        try:
            gitpython.Git().clone(*args, env=credential_env(url, token_env))
        except gitpython.GitCommandError as exc:
            if _looks_unreachable(exc):
                raise _unreachable(url, exc, token_env) from exc
            raise _git_error(exc, f"git clone {redact_url(url)}", f"is {dest} an empty directory?") from exc
    return dest


def fetch(repo_path: Path, remote: str = "origin", *, token_env: str | None = None) -> None:
    """Bring `remote`'s branches into `repo_path`'s remote-tracking refs (pruning deleted ones)."""
    with _open(repo_path) as repo:
        url = next((r.url for r in repo.remotes if r.name == remote), remote)
        refuse_credentials(url)
        try:
            repo.git.fetch("--quiet", "--prune", remote, env=credential_env(url, token_env))
        except gitpython.GitCommandError as exc:
            if _looks_unreachable(exc):
                raise _unreachable(url, exc, token_env) from exc
            raise _git_error(exc, f"git fetch {redact_url(url)}", "is the remote a git repository?") from exc


def reset_branch(repo_path: Path, branch: str, rev: str) -> str:
    """Check out `branch` at `rev` (created or moved there), discarding local changes to tracked files;
    returns the commit. For checkouts kernelbot owns, never a user's."""
    with _open(repo_path) as repo:
        try:
            sha = repo.commit(rev).hexsha
            repo.git.checkout("--quiet", "--force", "-B", branch, sha)
        except (gitpython.BadName, ValueError):
            raise GitError(f"{rev!r} is not a commit of {repo_path}: was it fetched?") from None
        except gitpython.GitCommandError as exc:
            raise _git_error(exc, f"git checkout -B {branch} {rev}", "is the work tree writable?") from exc
    return sha


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
    with _open(worktree) as repo:
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
            if _looks_unreachable(exc):
                raise _unreachable(url, exc, token_env) from exc
            doing = f"git push {branch} to {redact_url(url)}"
            raise _git_error(exc, doing, "may this remote be pushed to?") from exc
    return sha
