"""Real local git repositories for kernelbot's tests: an upstream (bare), a contributor's fork (bare) and a
checkout of the upstream, all under a test's tmp_path."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from kernelbot import git


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


def make_repos(root: Path) -> Repos:
    """An upstream bare repo with one commit on main, an empty bare fork, and a checkout of upstream."""
    seed = root / "seed"
    git.init_repository(seed)
    _seed_files(seed)
    base_sha = git.commit_all(seed, "initial layout")
    upstream = git.init_repository(root / "upstream.git", bare=True)
    fork = git.init_repository(root / "fork.git", bare=True)
    run_git(seed, "push", "--quiet", str(upstream), "main:main")
    checkout = git.clone(str(upstream), root / "checkout")
    return Repos(upstream=upstream, fork=fork, checkout=checkout, base_sha=base_sha)
