"""A work tree's change: as a patch against a base commit, applied to another work tree, or committed
under kernelbot's identity."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from kernelbot.errors import GitError
from kernelbot.git.env import config_env
from kernelbot.git.plumbing import git_error, gitpython, open_repo


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


def diff_against(worktree: Path, base: str) -> str:
    """The work tree's state (untracked files included, junk excluded) as a patch that `git apply`s on
    `base`. The real index is left alone: the files are staged into a throwaway index."""
    with open_repo(worktree) as repo, tempfile.TemporaryDirectory(prefix="kernelbot-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        try:
            repo.git.read_tree(base, env=env)
            repo.git.add("--all", "--", ".", *JUNK_PATHSPECS, env=env)
            options = ("--cached", "--binary", "--no-color", "--no-ext-diff")
            return repo.git.diff(*options, base, env=env, strip_newline_in_stdout=False)
        except gitpython.GitCommandError as exc:
            check = "is the base commit in this repository?"
            raise git_error(exc, f"diff of {worktree} against {base}", check) from exc


def apply_patch(worktree: Path, patch: str) -> None:
    """Apply a patch (as diff_against writes it) to the work tree's files; nothing is changed when any
    part of it does not apply."""
    with open_repo(worktree) as repo, tempfile.TemporaryDirectory(prefix="kernelbot-patch-") as tmp:
        path = Path(tmp) / "change.diff"
        path.write_text(patch)
        try:
            repo.git.apply("--whitespace=nowarn", str(path))
        except gitpython.GitCommandError as exc:
            check = "was the patch made against this work tree's commit?"
            raise git_error(exc, f"applying a patch in {worktree}", check) from exc


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
    with open_repo(worktree) as repo:
        try:
            repo.git.add("--all", "--", ".", *JUNK_PATHSPECS)
            if not repo.git.status("--porcelain", "--untracked-files=no"):
                raise GitError(f"nothing to commit in {worktree}: the change is empty")
            repo.git.commit("--no-verify", "--quiet", "-m", message, env=env)
            return repo.head.commit.hexsha
        except gitpython.GitCommandError as exc:
            raise git_error(exc, f"git commit in {worktree}", "is the work tree writable?") from exc
