"""Fixtures of the integration tests: the pinned formatters of every shipped profile, installed once per
session into the kernelbot tool cache (skipped with a reason when the package registry is unreachable),
and git repositories made from directory trees."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kernelbot.engines import SHIPPED, load_profile
from kernelbot.formatting import FormatterError, tool_venv

# A real package the SGLang 0.5.23 harness needs (its server arguments are built from msgspec structs at
# import time, which no fake can imitate); installed like a tool.
HARNESS_PACKAGES = ("msgspec==0.23.0",)


@pytest.fixture(scope="session")
def tool_venvs() -> dict[str, Path]:
    """requirement -> venv, for every formatter tool of the shipped profiles and the harness packages."""
    requirements = {
        tool.requirement
        for name in SHIPPED
        for tool in (*load_profile(name).formatter.tools, *load_profile(name).formatter.new_file_tools)
    }
    venvs = {}
    for requirement in sorted(requirements) + list(HARNESS_PACKAGES):
        try:
            venvs[requirement] = tool_venv(requirement)
        except FormatterError as exc:
            pytest.skip(f"cannot install {requirement} (is the package registry reachable?): {exc}")
    return venvs


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=kernelbot-tests", "-c", "user.email=tests@kernelbot.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def make_git_repo(source: Path, dest: Path) -> Path:
    """A git repository at `dest` holding a copy of `source` as its one commit."""
    shutil.copytree(
        source,
        dest,
        ignore=shutil.ignore_patterns("__pycache__", ".ruff_cache", "*.dist-info", ".kernelbot-*"),
    )
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "upstream")
    return dest
