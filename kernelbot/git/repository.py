"""Local repositories and their work trees: where a checkout's root is, what HEAD and a branch point at,
whether it is clean, and new repositories and detached work trees made for kernelbot's own use."""

from __future__ import annotations

from pathlib import Path

from kernelbot.errors import GitError
from kernelbot.git.changes import JUNK_PATHSPECS
from kernelbot.git.env import hook_variables_hidden
from kernelbot.git.plumbing import git_error, gitpython, open_repo, require_gitpython


def repo_root(path: Path) -> Path:
    """The top directory of the work tree `path` lies in."""
    with open_repo(path, search_parents=True) as repo:
        if repo.bare or repo.working_tree_dir is None:
            raise GitError(f"{path} is a bare repository: kernelbot needs a checkout with a work tree")
        return Path(repo.working_tree_dir).resolve()


def head_commit(repo_path: Path) -> str:
    """The full sha HEAD points at."""
    with open_repo(repo_path) as repo:
        try:
            return repo.head.commit.hexsha
        except ValueError:
            raise GitError(f"{repo_path} has no commits yet: commit something first") from None


def resolve_commit(repo_path: Path, rev: str) -> str:
    """The full sha of `rev` (a sha, tag or branch) in the repository."""
    with open_repo(repo_path) as repo:
        try:
            return repo.commit(rev).hexsha
        except (gitpython.BadName, ValueError, gitpython.GitCommandError):
            raise GitError(
                f"{rev!r} is not a commit of {repo_path}: check the sha, tag or branch name"
            ) from None


def current_branch(repo_path: Path) -> str | None:
    """The checked-out branch, or None on a detached HEAD."""
    with open_repo(repo_path) as repo:
        return None if repo.head.is_detached else repo.active_branch.name


def is_detached(repo_path: Path) -> bool:
    with open_repo(repo_path) as repo:
        return repo.head.is_detached


def dirty_paths(repo_path: Path) -> list[str]:
    """Paths with uncommitted changes, untracked files included (empty for a clean work tree)."""
    with open_repo(repo_path) as repo:
        try:
            out = repo.git.status("--porcelain", "--untracked-files=all", "--", ".", *JUNK_PATHSPECS)
        except gitpython.GitCommandError as exc:
            raise git_error(exc, f"git status in {repo_path}", "is the repository intact?") from exc
    return [line[3:] for line in out.splitlines() if line.strip()]


def is_dirty(repo_path: Path) -> bool:
    return bool(dirty_paths(repo_path))


def init_repository(path: Path, *, bare: bool = False, initial_branch: str = "main") -> Path:
    """A new repository at `path` (created if needed)."""
    require_gitpython()
    path.mkdir(parents=True, exist_ok=True)
    with hook_variables_hidden():
        try:
            gitpython.Repo.init(path, bare=bare, initial_branch=initial_branch).close()
        except gitpython.GitCommandError as exc:
            raise git_error(exc, f"git init {path}", "is the directory writable?") from exc
    return path


def add_worktree(repo_path: Path, path: Path, commit: str) -> Path:
    """A new work tree of `repo_path` at `path`, checked out at `commit` on a detached HEAD."""
    with open_repo(repo_path) as repo:
        try:
            repo.git.worktree("add", "--detach", str(path), commit)
        except gitpython.GitCommandError as exc:
            raise git_error(
                exc, f"git worktree add {path} at {commit}", "does the commit exist and is the path free?"
            ) from exc
    return path


def remove_worktree(repo_path: Path, path: Path) -> None:
    """Remove the work tree at `path` (changes in it are discarded) and forget it."""
    with open_repo(repo_path) as repo:
        try:
            if path.exists():
                repo.git.worktree("remove", "--force", str(path))
            repo.git.worktree("prune")
        except gitpython.GitCommandError as exc:
            check = "is it a work tree of this repository?"
            raise git_error(exc, f"git worktree remove {path}", check) from exc


def reset_branch(repo_path: Path, branch: str, rev: str) -> str:
    """Check out `branch` at `rev` (created or moved there), discarding local changes to tracked files;
    returns the commit. For checkouts kernelbot owns, never a user's."""
    with open_repo(repo_path) as repo:
        try:
            sha = repo.commit(rev).hexsha
            repo.git.checkout("--quiet", "--force", "-B", branch, sha)
        except (gitpython.BadName, ValueError):
            raise GitError(f"{rev!r} is not a commit of {repo_path}: was it fetched?") from None
        except gitpython.GitCommandError as exc:
            raise git_error(exc, f"git checkout -B {branch} {rev}", "is the work tree writable?") from exc
    return sha
