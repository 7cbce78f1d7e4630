"""Every git operation kernelbot performs, as a named function over GitPython.

Callers never build git command lines and only kernelbot.git.plumbing imports `git` (GitPython). Each
low-level failure becomes a `GitError` that says what to check; the two a user meets most have their own
classes:

    GitError
     ├── RemoteUnreachable   the remote could not be read or written (wrong URL, not a repository, no network,
     │                       no access)
     └── LeaseRejected       force-with-lease refused: the remote branch is not where kernelbot last saw it

Two habits keep git honest here. Variables a git hook exports (GIT_DIR, GIT_INDEX_FILE, ...) are removed
for the duration of every operation, so kernelbot run from a hook works on the repository it was given,
not on the hook's. And a token never enters a URL, .git/config or a log line: an HTTPS push or fetch that
needs one gets it through a credential helper configured in the environment of that one git process, which
reads the token from the environment too (both in kernelbot.git.env).

plumbing.py    GitPython, repositories opened with hook variables hidden, git's failures as GitErrors
repository.py  local repositories and work trees: root, HEAD, branches, dirty paths, init, worktrees
changes.py     a work tree's change as a patch, applied, or committed (Identity, BOT_IDENTITY)
remotes.py     remotes of a repository, a remote branch's sha, clone, fetch
push.py        push with force-with-lease
"""

from kernelbot.git.changes import (
    BOT_IDENTITY,
    JUNK_PATHSPECS,
    Identity,
    apply_patch,
    commit_all,
    diff_against,
)
from kernelbot.git.env import credential_env, redact_url  # part of the package's surface, as before
from kernelbot.git.plumbing import RemoteUnreachable
from kernelbot.git.push import LeaseRejected, push_with_lease
from kernelbot.git.remotes import clone, ensure_remote, fetch, remote_branch_sha, remote_url
from kernelbot.git.repository import (
    add_worktree,
    current_branch,
    dirty_paths,
    head_commit,
    init_repository,
    is_detached,
    is_dirty,
    remove_worktree,
    repo_root,
    reset_branch,
    resolve_commit,
)

__all__ = [
    "BOT_IDENTITY",
    "JUNK_PATHSPECS",
    "Identity",
    "LeaseRejected",
    "RemoteUnreachable",
    "add_worktree",
    "apply_patch",
    "clone",
    "commit_all",
    "credential_env",
    "current_branch",
    "diff_against",
    "dirty_paths",
    "ensure_remote",
    "fetch",
    "head_commit",
    "init_repository",
    "is_detached",
    "is_dirty",
    "push_with_lease",
    "redact_url",
    "remote_branch_sha",
    "remote_url",
    "remove_worktree",
    "repo_root",
    "reset_branch",
    "resolve_commit",
]
