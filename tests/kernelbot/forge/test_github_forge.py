"""GitHubForge, each verb against the loopback GitHub fake, with its head branch in a real bare fork."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import pytest
from git_repos import Repos
from github_fake import ACCEPTED_TOKEN, Failure, FakeGitHub

from kernelbot import git
from kernelbot.errors import ConfigError, TransportError
from kernelbot.forge import (
    ForgeAuthError,
    ForgeError,
    GitHubForge,
    Marker,
    PRState,
    repo_from_url,
    with_marker,
)
from kernelbot.forge.github import BODY_LIMIT

BRANCH = "kernelbot/silu-and-mul"
MARKER = Marker(op="silu-and-mul", kernel_hash="k" * 64, base_sha="b" * 40, tool="0.1.0")


@pytest.fixture
def fake(github_fake: Callable[..., FakeGitHub], repos: Repos) -> FakeGitHub:
    git.push_with_lease(repos.checkout, str(repos.fork), BRANCH, None)
    return github_fake(repo="upstream/engine", user="contributor", forks={"contributor/engine": repos.fork})


def _forge(fake: FakeGitHub, token: str = ACCEPTED_TOKEN, **options: object) -> GitHubForge:
    options = {"retries": 0, "pace": False, **options}
    return GitHubForge("upstream/engine", token, api_url=fake.url, **options)  # type: ignore[arg-type]


def test_create_then_find_by_head_branch(fake: FakeGitHub, repos: Repos) -> None:
    forge = _forge(fake)
    assert forge.find_prs(BRANCH) == []
    pr = forge.create_pr(head_branch=BRANCH, base_branch="main", title="t", body=with_marker("b", MARKER))
    assert pr.state is PRState.OPEN and pr.head_branch == BRANCH and pr.head_owner == "contributor"
    assert pr.head_sha == repos.base_sha  # what the fork's branch holds
    assert pr.url.startswith(fake.root)
    assert pr.marker == MARKER
    assert forge.find_prs(BRANCH) == [pr]
    assert forge.find_prs("kernelbot/other") == []
    assert fake.requests_to("GET", "/pulls")[-1].query["head"] == "contributor:kernelbot/other"
    assert fake.requests_to("GET", "/user")  # the head owner is the token's user


def test_an_already_existing_pr_is_the_same_pr(fake: FakeGitHub) -> None:
    forge = _forge(fake)
    first = forge.create_pr(head_branch=BRANCH, base_branch="main", title="t", body="b")
    again = forge.create_pr(head_branch=BRANCH, base_branch="main", title="t2", body="b2")
    assert again.number == first.number
    assert len(fake.requests_to("POST", "/pulls")) == 2 and len(fake.pulls()) == 1


def test_a_head_branch_missing_from_the_fork_is_a_clear_error(fake: FakeGitHub) -> None:
    with pytest.raises(ForgeError, match="check that the branch was pushed to the fork"):
        _forge(fake).create_pr(head_branch="kernelbot/never-pushed", base_branch="main", title="t", body="b")


def test_states_all_open_closed_merged(fake: FakeGitHub) -> None:
    forge = _forge(fake)
    first = forge.create_pr(head_branch=BRANCH, base_branch="main", title="t", body="b")
    fake.close(first.number)
    second = forge.create_pr(head_branch=BRANCH, base_branch="main", title="t", body="b")
    fake.merge(second.number)
    third = forge.create_pr(head_branch=BRANCH, base_branch="main", title="t", body="b")
    states = {pr.number: pr.state for pr in forge.find_prs(BRANCH, state="all")}
    assert states == {first.number: PRState.CLOSED, second.number: PRState.MERGED, third.number: PRState.OPEN}
    assert [pr.number for pr in forge.find_prs(BRANCH, state="open")] == [third.number]
    assert [pr.number for pr in forge.find_prs(state="closed")] == [second.number, first.number]


def test_update_and_close(fake: FakeGitHub) -> None:
    forge = _forge(fake)
    pr = forge.create_pr(head_branch=BRANCH, base_branch="main", title="old", body="old body")
    updated = forge.update_pr(pr.number, title="new", body="new body")
    assert (updated.title, updated.body, updated.state) == ("new", "new body", PRState.OPEN)
    assert fake.pull(pr.number)["title"] == "new"
    closed = forge.close_pr(pr.number)
    assert closed.state is PRState.CLOSED and fake.pull(pr.number)["state"] == "closed"
    reopened = forge.update_pr(pr.number, state=PRState.OPEN)
    assert reopened.state is PRState.OPEN


def test_one_comment_per_topic_edited_in_place(fake: FakeGitHub) -> None:
    forge = _forge(fake)
    pr = forge.create_pr(head_branch=BRANCH, base_branch="main", title="t", body="b")
    first = forge.ensure_comment(pr.number, "verification", "tests pass")
    assert first.action == "created" and first.url.startswith(fake.root)
    assert forge.ensure_comment(pr.number, "verification", "tests pass").action == "unchanged"
    edited = forge.ensure_comment(pr.number, "verification", "tests pass, e2e +3 %")
    assert edited.action == "updated" and edited.id == first.id
    other = forge.ensure_comment(pr.number, "benchmarks", "table")
    assert other.action == "created" and other.id != first.id
    bodies = [c["body"] for c in fake.comments(pr.number)]
    assert len(bodies) == 2 and "tests pass, e2e +3 %" in bodies[0]


def test_massage_markdown_fits_the_limit_and_keeps_the_marker(fake: FakeGitHub) -> None:
    forge = _forge(fake)
    assert forge.massage_markdown("a\r\nb\r\n") == "a\nb\n"
    huge = with_marker("x" * (BODY_LIMIT * 2), MARKER)
    massaged = forge.massage_markdown(huge)
    assert len(massaged) <= BODY_LIMIT
    assert massaged.rstrip().endswith(MARKER.render()) and "size limit" in massaged


def test_listing_follows_pagination(fake: FakeGitHub) -> None:
    for i in range(105):
        fake.seed_pull(head=f"someone:feature/{i}", title=f"pr {i}", body="b")
    assert len(_forge(fake).find_prs(state="open")) == 105
    assert len(fake.requests_to("GET", "/pulls")) == 2


def test_a_refused_token_is_one_clear_error(fake: FakeGitHub) -> None:
    forge = _forge(fake, token="ghp_wrongWrongWrong")
    with pytest.raises(ForgeAuthError) as info:
        forge.find_prs(BRANCH)
    message = str(info.value)
    assert message.startswith("the GitHub token in $GITHUB_TOKEN was refused: Bad credentials (HTTP 401)")
    assert "ghp_wrongWrongWrong" not in message and "ghp_wrongWrongWrong" not in repr(forge)
    assert fake.requests[-1].headers["authorization"] == "token ghp_wrongWrongWrong"  # it was sent, not shown


def test_a_forbidden_write_names_the_token_too(fake: FakeGitHub) -> None:
    fake.fail_next(Failure(403, "Resource not accessible by personal access token", method="POST"))
    with pytest.raises(ForgeAuthError, match=r"\$KB_TOKEN was refused: Resource not accessible"):
        _forge(fake, token_env="KB_TOKEN").create_pr(
            head_branch=BRANCH, base_branch="main", title="t", body="b"
        )


def test_a_missing_token_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KB_NO_SUCH_TOKEN", raising=False)
    with pytest.raises(ForgeAuthError, match=r"set \$KB_NO_SUCH_TOKEN"):
        GitHubForge.from_env("upstream/engine", token_env="KB_NO_SUCH_TOKEN")


def test_an_unreachable_api_is_a_transport_error_naming_the_url() -> None:
    forge = GitHubForge("upstream/engine", ACCEPTED_TOKEN, api_url="http://127.0.0.1:9/api/v3", retries=0)
    with pytest.raises(TransportError, match=r"cannot reach the GitHub API at http://127\.0\.0\.1:9/api/v3"):
        forge.find_prs(BRANCH)


def test_an_unknown_repository_and_a_server_error(fake: FakeGitHub) -> None:
    missing = GitHubForge("nobody/nothing", ACCEPTED_TOKEN, api_url=fake.url, retries=0, pace=False)
    with pytest.raises(ForgeError, match="nobody/nothing not found at"):
        missing.find_prs(BRANCH)
    fake.fail_next(Failure(500, "boom"))
    with pytest.raises(ForgeError, match=r"GitHub refused .*: boom \(HTTP 500\)"):
        _forge(fake).find_prs(BRANCH)
    fake.fail_next(Failure(502, "flaky"))
    assert _forge(fake, retries=2).find_prs(BRANCH) == []  # a passing 5xx is retried


def test_the_api_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELBOT_GITHUB_API", "http://127.0.0.1:9/api/v3/")
    assert GitHubForge("a/b", "t").api_url == "http://127.0.0.1:9/api/v3"
    monkeypatch.delenv("KERNELBOT_GITHUB_API")
    assert GitHubForge("a/b", "t").api_url == "https://api.github.com"


def test_only_an_api_on_this_machine_goes_unpaced() -> None:
    """PyGithub's spacing between requests (GitHub's advice against its secondary rate limits) stays on for
    any remote API; a loopback one (the fake in these tests) needs none, unless `pace` says otherwise."""
    for url in ("http://127.0.0.1:9/api/v3", "http://localhost:9/api/v3", "http://[::1]:9/api/v3"):
        assert not GitHubForge("a/b", "t", api_url=url).paced, url
    for url in ("https://api.github.com", "https://ghe.example.com/api/v3", "http://10.0.0.1/api/v3"):
        assert GitHubForge("a/b", "t", api_url=url).paced, url
    assert GitHubForge("a/b", "t", api_url="http://127.0.0.1:9/api/v3", pace=True).paced
    assert not GitHubForge("a/b", "t", api_url="https://api.github.com", pace=False).paced


def test_repo_from_url() -> None:
    assert repo_from_url("https://github.com/sgl-project/sglang") == "sgl-project/sglang"
    assert repo_from_url("https://github.com/InternLM/lmdeploy.git") == "InternLM/lmdeploy"
    assert repo_from_url("git@github.com:me/fork.git") == "me/fork"
    assert repo_from_url("owner/name") == "owner/name"
    with pytest.raises(ConfigError):
        repo_from_url("https://github.com/")


def test_for_profile_takes_the_upstream_and_api_url_from_the_profile(
    fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_TOKEN", ACCEPTED_TOKEN)
    monkeypatch.delenv("KERNELBOT_GITHUB_API", raising=False)
    profile = SimpleNamespace(repo_url="https://github.com/upstream/engine.git", api_url=fake.url)
    forge = GitHubForge.for_profile(profile, token_env="KB_TOKEN", retries=0, pace=False)
    assert forge.repo == "upstream/engine" and forge.api_url == fake.url
    assert forge.find_prs("kernelbot/x") == []
    monkeypatch.setenv(
        "KERNELBOT_GITHUB_API", "http://127.0.0.1:9/api/v3"
    )  # the environment wins over the profile
    assert GitHubForge.for_profile(profile, token_env="KB_TOKEN").api_url == "http://127.0.0.1:9/api/v3"
    assert (
        GitHubForge.for_profile(profile, api_url="http://x/api", token_env="KB_TOKEN").api_url
        == "http://x/api"
    )
