"""Where the extracted code comes from: the git commit of a checkout, or the release of an unpacked
distribution (a wheel or sdist has `<name>-<version>.dist-info` / PKG-INFO beside the packages)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SourceInfo:
    repo: str  # a remote URL when the checkout has one, else the directory
    commit: str  # git sha, "<dist>==<version>" for a release, or "unknown"
    dirty: bool = False


def source_info(repo: Path) -> SourceInfo:
    repo = repo.resolve()
    git = _git_info(repo)
    if git is not None:
        return git
    release = _release(repo)
    return SourceInfo(str(repo), release or "unknown")


def _git_info(repo: Path) -> SourceInfo | None:
    try:
        import git
    except ImportError:  # gitpython is a dependency, but a missing one must not break extraction
        return None
    try:
        checkout = git.Repo(repo, search_parent_directories=True)
        sha = checkout.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None
    except git.GitCommandError:
        return None
    url = ""
    try:
        remote = next(iter(checkout.remotes), None)
        url = next(iter(remote.urls), "") if remote is not None else ""
    except git.GitCommandError:
        url = ""
    try:
        dirty = checkout.is_dirty(untracked_files=False)
    except git.GitCommandError:
        dirty = False
    return SourceInfo(_strip_credentials(url) or str(repo), sha, dirty)


def _release(repo: Path) -> str:
    for meta in sorted(repo.glob("*.dist-info/METADATA")) + sorted(repo.glob("PKG-INFO")):
        text = meta.read_text(errors="replace")
        name = re.search(r"^Name:\s*(\S+)", text, re.M)
        version = re.search(r"^Version:\s*(\S+)", text, re.M)
        if name and version:
            return f"{name.group(1)}=={version.group(1)}"
    match = re.match(r"^([A-Za-z0-9_.]+)-(\d[^/]*)$", repo.name)
    return f"{match.group(1)}=={match.group(2)}" if match else ""


def _strip_credentials(url: str) -> str:
    return re.sub(r"//[^/@]+@", "//", url)
