"""open_or_update end to end: a bundle pushed over HTTP (token through the credential helper) to a real bare
fork, the PR opened on the loopback GitHub fake; a second run does not duplicate it, a changed kernel updates
it, a kernel closed unmerged is never proposed again, one open kernelbot PR at most, a bad token is one clear
error, and the token is in no file and no output."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from git_http_fake import GitHttpServer
from git_repos import Repos, run_git
from github_fake import ACCEPTED_TOKEN, FakeGitHub
from proposal_fixtures import ProfileStandIn

from kernelbot import git
from kernelbot.forge import ForgeAuthError, GitHubForge, parse_marker
from kernelbot.propose import Bundle, Evidence, ProposeOutcome, open_or_update, write_bundle
from kernelbot.propose.evidence import RepoEvidence

PROFILE = ProfileStandIn()


@dataclasses.dataclass
class World:
    repos: Repos
    fake: FakeGitHub
    fork_url: str
    fork_repo: Path  # the bare repository behind fork_url
    base: Evidence
    run_dir: Path
    work: Path

    def forge(self, token_env: str = "GITHUB_TOKEN") -> GitHubForge:
        return GitHubForge.from_env(
            "upstream/engine", api_url=self.fake.url, token_env=token_env, retries=0, pace=False
        )

    def bundle(self, kernel: str, *, op: str | None = None, name: str = "run") -> Bundle:
        """A bundle for `kernel` (its body line) against the upstream's base commit."""
        tree = self.work / f"tree-{name}"
        git.add_worktree(self.repos.checkout, tree, self.repos.base_sha)
        (tree / "pkg" / "kernels.py").write_text(f"def fused(x):\n    return {kernel}\n")
        patch = git.diff_against(tree, self.repos.base_sha)
        git.remove_worktree(self.repos.checkout, tree)
        slug = op or self.base.op.slug
        evidence = dataclasses.replace(
            self.base,
            op=dataclasses.replace(self.base.op, slug=slug, kernel_hash=f"{kernel}-hash".ljust(64, "0")),
        )
        return write_bundle(self.run_dir / name, evidence, PROFILE, patch)

    def branch_file(self, branch: str) -> str:
        return run_git(self.fork_repo, "show", f"{branch}:pkg/kernels.py")


@pytest.fixture
def world(
    repos: Repos,
    github_fake: Callable[..., FakeGitHub],
    cpu_evidence: Evidence,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[World]:
    monkeypatch.setenv("GITHUB_TOKEN", ACCEPTED_TOKEN)
    served = tmp_path / "served"
    served.mkdir()
    fork_repo = served / "fork.git"
    run_git(tmp_path, "clone", "--quiet", "--bare", str(repos.upstream), str(fork_repo))
    run_git(fork_repo, "config", "http.receivepack", "true")
    server = GitHttpServer(root=served, token=ACCEPTED_TOKEN).__enter__()
    fake = github_fake(repo="upstream/engine", user="contributor", forks={"contributor/engine": fork_repo})
    base = dataclasses.replace(
        cpu_evidence, repo=RepoEvidence(url=str(repos.upstream), base_sha=repos.base_sha, branch="main")
    )
    fork_url = server.url_for("fork.git")
    git.ensure_remote(repos.checkout, "fork", fork_url)
    work = tmp_path / "work"
    work.mkdir()
    yield World(repos, fake, fork_url, fork_repo, base, tmp_path / "runs", work)
    server.__exit__(None, None, None)


def _propose(world: World, bundle: Bundle, **options: object) -> ProposeOutcome:
    return open_or_update(
        bundle,
        PROFILE,
        world.forge(),
        world.repos.checkout,
        fork="fork",
        **options,  # type: ignore[arg-type]
    )


def test_open_once_then_skip_then_update(world: World) -> None:
    first = world.bundle("x * 1")
    opened = _propose(world, first)
    assert opened.action == "opened" and opened.number == 1
    assert opened.url == f"{world.fake.root}/upstream/engine/pull/1"
    branch = "kernelbot/silu-and-mul-forward-native"
    pushed = git.remote_branch_sha(world.fork_url, branch, token_env="GITHUB_TOKEN")
    assert pushed == opened.pushed_sha == world.fake.pull(1)["head"]["sha"]
    assert world.branch_file(branch) == "def fused(x):\n    return x * 1\n"
    parent = run_git(world.fork_repo, "log", "-1", "--format=%P|%an", branch).strip()
    assert parent == f"{world.repos.base_sha}|kernelbot"  # one bot commit on the base
    pr = world.fake.pull(1)
    assert pr["title"] == first.title and pr["base"]["ref"] == "main"
    assert parse_marker(pr["body"]) == dataclasses.replace(first.marker, commit=pushed)
    assert pr["body"].split("<!-- kernelbot:")[0] == first.body.split("<!-- kernelbot:")[0]

    # The same kernel again: nothing is pushed, nothing is opened.
    again = _propose(world, world.bundle("x * 1", name="again"))
    assert again.action == "skipped" and again.number == 1 and "already carries kernel" in again.reason
    assert len(world.fake.requests_to("POST", "/pulls")) == 1
    assert git.remote_branch_sha(world.fork_url, branch, token_env="GITHUB_TOKEN") == pushed

    # A changed kernel: the branch moves (with the lease on the old head) and the PR is updated in place.
    changed = world.bundle("x * 2", name="changed")
    updated = _propose(world, changed)
    assert updated.action == "updated" and updated.number == 1 and "kernel" in updated.reason
    assert world.branch_file(branch) == "def fused(x):\n    return x * 2\n"
    now = parse_marker(world.fake.pull(1)["body"])
    assert now.kernel_hash == changed.marker.kernel_hash
    assert now.commit == updated.pushed_sha == world.fake.pull(1)["head"]["sha"]
    assert len(world.fake.pulls()) == 1
    comments = world.fake.comments(1)
    assert len(comments) == 1 and "kernelbot refreshed this PR" in comments[0]["body"]
    assert _propose(world, world.bundle("x * 2", name="changed-again")).action == "skipped"


def test_a_kernel_closed_unmerged_is_never_proposed_again(world: World) -> None:
    _propose(world, world.bundle("x * 1"))
    world.fake.close(1)
    refused = _propose(world, world.bundle("x * 1", name="again"))
    assert refused.action == "refused" and refused.number == 1 and "never proposes" in refused.reason
    assert len(world.fake.pulls()) == 1 and world.fake.pull(1)["state"] == "closed"
    # A different kernel for the same function may open a new PR, reusing the branch.
    fresh = _propose(world, world.bundle("x + 0", name="fresh"))
    assert fresh.action == "opened" and fresh.number == 2
    assert world.branch_file("kernelbot/silu-and-mul-forward-native").endswith("return x + 0\n")


def test_at_most_one_open_kernelbot_pr(world: World) -> None:
    assert _propose(world, world.bundle("x * 1")).action == "opened"
    other = world.bundle("x * 3", op="rmsnorm-forward", name="other")
    refused = _propose(world, other)
    assert refused.action == "refused" and "#1" in refused.reason and "at most 1 open" in refused.reason
    assert (
        git.remote_branch_sha(world.fork_url, "kernelbot/rmsnorm-forward", token_env="GITHUB_TOKEN") is None
    )
    assert _propose(world, other, max_open=2).action == "opened"


def test_a_pr_already_open_for_the_branch_is_the_same_pr(world: World) -> None:
    """GitHub's 422 'already exists' (a PR opened between our read and our create) returns that PR."""
    bundle = world.bundle("x * 1")
    forge = world.forge()
    git.push_with_lease(world.repos.checkout, "fork", bundle.branch, None, token_env="GITHUB_TOKEN")
    raced = forge.create_pr(head_branch=bundle.branch, base_branch="main", title="raced", body="no marker")
    again = forge.create_pr(
        head_branch=bundle.branch, base_branch="main", title=bundle.title, body=bundle.body
    )
    assert again.number == raced.number and len(world.fake.pulls()) == 1


def test_someone_elses_push_to_the_branch_is_not_overwritten(world: World) -> None:
    _propose(world, world.bundle("x * 1"))
    branch = "kernelbot/silu-and-mul-forward-native"
    other = world.work / "maintainer"
    run_git(world.work, "clone", "--quiet", "--branch", branch, str(world.fork_repo), str(other))
    (other / "pkg" / "kernels.py").write_text("def fused(x):\n    return x  # reviewed\n")
    run_git(other, "-c", "user.name=m", "-c", "user.email=m@x", "commit", "--quiet", "-am", "review fixup")
    run_git(other, "push", "--quiet", "origin", branch)
    # The PR's head follows the maintainer's push (as on GitHub); its marker keeps what kernelbot pushed.
    assert world.fake.pull(1)["head"]["sha"] != parse_marker(world.fake.pull(1)["body"]).commit
    with pytest.raises(git.LeaseRejected, match="someone else has pushed"):
        _propose(world, world.bundle("x * 2", name="changed"))
    assert world.branch_file(branch).endswith("# reviewed\n")


def test_a_bad_token_is_one_clear_error(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_notTheRightOne000000")
    monkeypatch.setenv("KB_GOOD_TOKEN", ACCEPTED_TOKEN)
    with pytest.raises(ForgeAuthError) as info:
        _propose(world, world.bundle("x * 1"))
    assert str(info.value).startswith(
        "the GitHub token in $GITHUB_TOKEN was refused: Bad credentials (HTTP 401)"
    )
    assert "ghp_notTheRightOne" not in str(info.value)
    branch = "kernelbot/silu-and-mul-forward-native"
    assert git.remote_branch_sha(world.fork_url, branch, token_env="KB_GOOD_TOKEN") is None  # nothing pushed


def test_the_token_is_in_no_file_and_no_output(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    outcomes = [_propose(world, world.bundle("x * 1")), _propose(world, world.bundle("x * 2", name="b"))]
    world.fake.close(1)
    outcomes.append(_propose(world, world.bundle("x * 2", name="c")))
    assert [o.action for o in outcomes] == ["opened", "updated", "refused"]
    leaks = []
    for path in tmp_path.rglob("*"):
        if path.is_file() and ACCEPTED_TOKEN.encode() in path.read_bytes():
            leaks.append(path)
    assert leaks == []
    captured = capsys.readouterr()
    assert ACCEPTED_TOKEN not in captured.out + captured.err + caplog.text
    assert all(ACCEPTED_TOKEN not in repr(o) + o.describe() for o in outcomes)
    assert ACCEPTED_TOKEN not in repr(world.forge())
    sent = [r for r in world.fake.requests if ACCEPTED_TOKEN in str(r.body) or ACCEPTED_TOKEN in r.path]
    assert sent == []  # only ever in the Authorization header
    assert all(r.headers["authorization"] == f"token {ACCEPTED_TOKEN}" for r in world.fake.requests)


def test_outcomes_describe_themselves(world: World) -> None:
    opened = _propose(world, world.bundle("x * 1"))
    assert opened.describe().startswith(f"opened #1 ({world.fake.root}/upstream/engine/pull/1): no PR for")
    skipped = _propose(world, world.bundle("x * 1", name="again"))
    assert skipped.describe().startswith("skipped (#1): #1 already carries kernel")
