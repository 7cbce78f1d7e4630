"""Fixtures shared by kernelbot's tests: the loopback GitHub fake and real local git repositories (an
upstream, a contributor's fork, and a checkout of the upstream to change), all under tmp_path."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from github_fake import FakeGitHub

from kernelbot import git

ACCEPTED_TOKEN = "ghp_kernelbotTestToken0123456789abcdef"  # what the fake accepts; tests grep for it


@dataclass(frozen=True)
class Repos:
    upstream: Path  # bare: what a PR targets
    fork: Path  # bare: where kernelbot pushes its branch
    checkout: Path  # a clone of upstream, on main
    base_sha: str  # main's head in upstream


def run_git(cwd: Path, *args: str) -> str:
    """A plain git call for test set-up and inspection (independent of the code under test)."""
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def _seed_files(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "layers.py").write_text("def silu_and_mul(x):\n    return x\n")
    (root / "README.md").write_text("# upstream\n")


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    """An upstream bare repo with one commit on main, an empty bare fork, and a checkout of upstream."""
    seed = tmp_path / "seed"
    git.init_repository(seed)
    _seed_files(seed)
    base_sha = git.commit_all(seed, "initial layout")
    upstream = git.init_repository(tmp_path / "upstream.git", bare=True)
    fork = git.init_repository(tmp_path / "fork.git", bare=True)
    run_git(seed, "push", "--quiet", str(upstream), "main:main")
    checkout = git.clone(str(upstream), tmp_path / "checkout")
    return Repos(upstream=upstream, fork=fork, checkout=checkout, base_sha=base_sha)


@pytest.fixture
def github_fake() -> Iterator[Callable[..., FakeGitHub]]:
    """Factory: `github_fake(repo="owner/name", forks={"me/name": path}, token=...)` starts a fake; all are
    stopped after the test."""
    servers: list[FakeGitHub] = []

    def start(**kwargs: object) -> FakeGitHub:
        kwargs.setdefault("token", ACCEPTED_TOKEN)
        server = FakeGitHub(**kwargs).start()  # type: ignore[arg-type]
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
