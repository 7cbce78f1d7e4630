"""What every git operation of kernelbot.git stands on: GitPython (absent where no git executable is
found), repositories opened with a hook's variables hidden, and git's failures turned into GitErrors that
say what to check. The modules of kernelbot.git reach GitPython through this one."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from evaluators import secrets
from kernelbot.errors import GitError
from kernelbot.git.env import hook_variables_hidden, redact_text, redact_url

try:
    import git as gitpython
except ImportError as _exc:  # GitPython refuses to import when no git executable is found
    gitpython = None  # type: ignore[assignment]
    _IMPORT_PROBLEM = str(_exc).splitlines()[0] if str(_exc) else "git not found"


class RemoteUnreachable(GitError):
    """Raised when a remote cannot be listed, fetched from or pushed to."""


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


def require_gitpython() -> None:
    """Raise a GitError saying why when GitPython could not be imported (no usable git executable)."""
    if gitpython is None:
        raise GitError(f"git is not usable here ({_IMPORT_PROBLEM}): install git and make sure it is on PATH")


@contextlib.contextmanager
def open_repo(path: Path, *, search_parents: bool = False) -> Iterator[gitpython.Repo]:
    """The repository at `path`, with a hook's GIT_* variables hidden while it is open."""
    require_gitpython()
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


def git_error(exc: gitpython.GitCommandError, doing: str, check: str) -> GitError:
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


def looks_unreachable(exc: gitpython.GitCommandError) -> bool:
    text = f"{exc.stderr or ''}\n{exc.stdout or ''}".lower()
    return any(sign in text for sign in _UNREACHABLE_SIGNS)


def unreachable(remote: str, exc: gitpython.GitCommandError, token_env: str | None) -> RemoteUnreachable:
    if not token_env:
        access = "that you have access to it"
    elif secrets.get(token_env):
        access = f"that the token in ${token_env} may use it"
    else:
        access = f"that ${token_env} holds a token that may use it (it is not set)"
    return RemoteUnreachable(
        f"cannot reach the git remote {redact_url(remote)} ({_first_problem(exc)}): check the URL or path, "
        f"that it is a git repository, the network, and {access}"
    )
