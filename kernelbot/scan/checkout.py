"""The repository a scan looks at, brought up to date at the start of every scan.

    --repo PATH                    a local checkout, used in place at its HEAD (it must be clean and on a
                                   branch; whoever runs the scan keeps it current, e.g. actions/checkout)
    --repo URL (or a bare repo)    cloned once into STATE/upstream, then fetched at every scan and moved to
    (no --repo: the profile's URL) the remote's default branch: a scan always sees the newest upstream
    no --repo, example profile     the bundled example committed once into STATE/upstream
    --repo pypi:NAME==VERSION      the release's sources committed once into STATE/upstream

Target runs are then made against that checkout (kernelbot.target.repo's "local checkout" case): their work
trees are added to it, so the clone is kept, never replaced, while runs that use it may still continue.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelbot import git
from kernelbot.engines.model import Profile
from kernelbot.errors import GitError
from kernelbot.target import repo as target_repo

UPSTREAM_DIR = target_repo.UPSTREAM_DIR


@dataclass(frozen=True)
class ScanRepo:
    source: str  # as the user gave it, or what it defaulted to ("example", the profile's URL)
    path: Path  # the checkout target runs are made against
    base_sha: str  # the commit this scan looks at
    branch: str
    fetched: bool  # True when it follows a remote (its base moves between scans)


def scan_source(source: str | None, profile: Profile) -> str:
    if source is not None:
        return source
    if profile.name == target_repo.EXAMPLE_PROFILE:
        return target_repo.EXAMPLE_SOURCE
    return profile.repo_url


def prepare_scan_repo(source: str, profile: Profile, state_dir: Path) -> ScanRepo:
    """The checkout for this scan, up to date; ConfigError / GitError with what to fix."""
    upstream = state_dir / UPSTREAM_DIR
    copied = source == target_repo.EXAMPLE_SOURCE or source.startswith("pypi:")
    if not copied and not target_repo.is_remote(source):
        prepared = target_repo.prepare(
            source, profile.name, profile.repo_url, state_dir
        )  # the checkout itself
        return ScanRepo(source, prepared.path, prepared.base_commit, prepared.branch, fetched=False)
    if not (upstream / ".git").exists():
        prepared = target_repo.prepare(source, profile.name, profile.repo_url, state_dir)
        return ScanRepo(source, prepared.path, prepared.base_commit, prepared.branch, fetched=not copied)
    if copied:  # a fixed tree: its one commit is the base of every scan
        return ScanRepo(
            source, upstream, git.head_commit(upstream), git.current_branch(upstream) or "", False
        )
    git.fetch(upstream)
    branch = _followed_branch(upstream, profile)
    sha = git.reset_branch(upstream, branch, f"origin/{branch}")
    return ScanRepo(source, upstream, sha, branch, fetched=True)


def _followed_branch(upstream: Path, profile: Profile) -> str:
    """The profile's default branch when the remote has it, else the branch the clone started on."""
    wanted = profile.default_branch
    if wanted:
        try:
            git.resolve_commit(upstream, f"origin/{wanted}")
            return wanted
        except GitError:
            pass
    current = git.current_branch(upstream)
    if current is None:
        raise GitError(f"{upstream} is on a detached HEAD: delete it and the next scan clones it again")
    return current
