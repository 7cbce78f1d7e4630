"""The repository a target run changes, made ready once at the start of the run.

    (no --repo), example profile   the bundled examples/minirepo copied into RUN/upstream and committed:
                                   the "upstream" the change is made against
    --repo PATH                    a local checkout, used in place: it must be clean and on a branch
    --repo URL (or a bare repo)    cloned into RUN/upstream (no --repo for another profile: its repo_url)
    --repo pypi:NAME==VERSION      the release's sources (extractors.release_sources) copied into
                                   RUN/upstream where the upstream repository keeps them (the profile's first
                                   source root: SGLang's python/, LMDeploy's top level), committed and tagged
                                   with the release's tag (`v<version>`), so the patch's paths are the
                                   repository's and its base is named as upstream names it

The change itself is then made in RUN/worktree, a git work tree of the base commit, so the user's checkout
is never touched.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from kernelbot import git
from kernelbot.errors import ConfigError, GitError

UPSTREAM_DIR = "upstream"
EXAMPLE_SOURCE = "example"
EXAMPLE_PROFILE = "example"
# Left out when a tree is copied: caches and build output that are no part of the sources.
_COPY_IGNORED = shutil.ignore_patterns(
    ".git",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    "*.egg-info",
    "build",
    "dist",
    "*.dist-info",  # a release's packaging metadata, no part of its repository
    ".kernelbot-*",  # the source cache's markers
)
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")
# The one commit of a copied tree (the example, a release) is dated here rather than now, and made by
# kernelbot's identity: the same tree then gets the same base sha in every fresh run, so a PR's marker
# (which records the base) still matches when the same example or release is run again.
IMPORT_DATE = "2000-01-01T00:00:00+00:00"
_SHOWN_DIRTY = 5


def release_tag(source: str) -> str:
    """The upstream tag of a `pypi:NAME==VERSION` source: SGLang and LMDeploy tag releases `v<version>`.
    Empty for any other source."""
    if not source.startswith("pypi:") or "==" not in source:
        return ""
    return "v" + source.split("==", 1)[1].strip()


def release_layout_root(profile_name: str) -> str:
    """Where the repository keeps the package an unpacked release has at its top: the profile's first
    source root ("python" for SGLang, "" for LMDeploy and the example). "" for a profile not shipped."""
    from kernelbot.engines import load_profile

    try:
        return load_profile(profile_name).source_roots[0]
    except (ConfigError, IndexError):
        return ""


@dataclass(frozen=True)
class PreparedRepo:
    source: str
    path: Path
    base_commit: str
    branch: str


def bundled_example() -> Path:
    """examples/minirepo of the kernelbot checkout this code runs from."""
    path = Path(__file__).resolve().parents[2] / "examples" / "minirepo"
    if not (path / "minisglang").is_dir():
        raise ConfigError(
            f"the bundled example is not in this install ({path} is missing): run kernelbot from a checkout "
            "of its repository, or pass --repo"
        )
    return path


def is_remote(source: str) -> bool:
    if "://" in source or _SCP_LIKE.match(source):
        return True
    path = Path(source).expanduser()
    return path.is_dir() and (path / "HEAD").is_file() and (path / "objects").is_dir()  # a bare repository


def prepare(source: str | None, profile_name: str, repo_url: str, run_dir: Path) -> PreparedRepo:
    """Make the repository ready; raises ConfigError / GitError with what to fix."""
    if source is None:
        source = EXAMPLE_SOURCE if profile_name == EXAMPLE_PROFILE else repo_url
        if not source:
            raise ConfigError(f"the {profile_name} profile names no repository: pass --repo PATH|URL")
    upstream = run_dir / UPSTREAM_DIR
    if source == EXAMPLE_SOURCE:
        return _committed_copy(source, bundled_example(), upstream, "the bundled example repository")
    if source.startswith("pypi:"):
        from extractors.release_sources import fetch_release

        release = source.removeprefix("pypi:")
        tree = fetch_release(release)
        return _committed_copy(
            source,
            tree,
            upstream,
            f"the sources of the {release} release",
            under=release_layout_root(profile_name),
            tag=release_tag(source),
        )
    if is_remote(source):
        _clear(upstream)
        git.clone(source, upstream)
        return _checkout(source, upstream)
    path = Path(source).expanduser()
    if not path.exists():
        raise ConfigError(f"--repo {source}: no such directory, and not a URL or pypi:NAME==VERSION")
    return local_checkout(source, path)


def local_checkout(source: str, path: Path) -> PreparedRepo:
    """A user's checkout, used in place: refused when it has uncommitted changes or no branch checked out."""
    try:
        root = git.repo_root(path)
    except GitError as exc:
        raise GitError(f"--repo {source}: not a git checkout ({exc})") from exc
    dirty = git.dirty_paths(root)
    if dirty:
        more = len(dirty) - _SHOWN_DIRTY
        shown = ", ".join(dirty[:_SHOWN_DIRTY]) + (f" and {more} more" if more > 0 else "")
        raise GitError(
            f"--repo {root} has uncommitted changes ({shown}): commit or stash them first, so the change is "
            "made against a known commit"
        )
    if git.is_detached(root):
        raise GitError(
            f"--repo {root} is on a detached HEAD: check out the branch the change should be based on"
        )
    return _checkout(source, root)


def _checkout(source: str, path: Path) -> PreparedRepo:
    return PreparedRepo(source, path, git.head_commit(path), git.current_branch(path) or "")


def _committed_copy(
    source: str, tree: Path, dest: Path, what: str, *, under: str = "", tag: str = ""
) -> PreparedRepo:
    """`tree` copied into a new repository at `dest` (into its folder `under`), committed as its first
    commit and, with `tag`, tagged."""
    _clear(dest)
    shutil.copytree(tree, dest / under if under else dest, ignore=_COPY_IGNORED, symlinks=True)
    git.init_repository(dest)
    git.commit_all(dest, f"Import {what}", date=IMPORT_DATE)
    if tag:
        _tag(dest, tag)
    return _checkout(source, dest)


def _tag(path: Path, tag: str) -> None:
    from kernelbot.git.plumbing import open_repo

    with open_repo(path) as repo:
        repo.create_tag(tag)


def _clear(path: Path) -> None:
    """A copy or clone left half-made by a killed run is ours (it lies under RUN): start it again."""
    if path.exists():
        shutil.rmtree(path)
