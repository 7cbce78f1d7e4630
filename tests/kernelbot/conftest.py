"""Fixtures shared by kernelbot's tests: the loopback GitHub fake and real local git repositories (an
upstream, a contributor's fork, and a checkout of the upstream to change), all under tmp_path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from git_repos import Repos, make_repos
from github_fake import ACCEPTED_TOKEN, FakeGitHub


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    """An upstream bare repo with one commit on main, an empty bare fork, and a checkout of upstream."""
    return make_repos(tmp_path)


@pytest.fixture
def github_fake() -> Iterator[Callable[..., FakeGitHub]]:
    """Factory: `github_fake(repo="owner/name", forks={"me/name": path}, token=...)` starts a fake (accepting
    ACCEPTED_TOKEN unless told otherwise); all are stopped after the test."""
    servers: list[FakeGitHub] = []

    def start(**kwargs: object) -> FakeGitHub:
        kwargs.setdefault("token", ACCEPTED_TOKEN)
        server = FakeGitHub(**kwargs).start()  # type: ignore[arg-type]
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
