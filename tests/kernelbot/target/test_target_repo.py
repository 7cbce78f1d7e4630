"""The repository a target run changes: the bundled example made an upstream, a user's checkout checked,
a URL cloned, a release committed."""

from __future__ import annotations

from pathlib import Path

import pytest

from extractors.release_sources import cache_dir
from kernelbot import git
from kernelbot.errors import ConfigError, GitError
from kernelbot.target.repo import IMPORT_DATE, is_remote, prepare, release_tag
from tests.kernelbot.git_repos import Repos, run_git


def test_the_bundled_example_becomes_a_committed_upstream(tmp_path: Path) -> None:
    prepared = prepare(None, "example", "", tmp_path / "run")
    assert prepared.path == tmp_path / "run" / "upstream" and prepared.source == "example"
    assert prepared.base_commit == git.head_commit(prepared.path) and prepared.branch == "main"
    assert not git.is_dirty(prepared.path)
    tracked = run_git(prepared.path, "ls-files").split()
    assert "minisglang/layers/activation.py" in tracked and "benchmarks/throughput.py" in tracked
    assert not [p for p in tracked if "__pycache__" in p or ".ruff_cache" in p]
    # Again (a run killed half-way through the copy): the leftover is replaced, not merged.
    (prepared.path / "stray.txt").write_text("left by a killed run")
    again = prepare(None, "example", "", tmp_path / "run")
    assert not (again.path / "stray.txt").exists()


def test_the_same_example_gets_the_same_base_sha_in_every_fresh_run(tmp_path: Path) -> None:
    first = prepare(None, "example", "", tmp_path / "one")
    second = prepare(None, "example", "", tmp_path / "two")
    assert first.base_commit == second.base_commit  # so a PR's marker (its base_sha) still matches
    stamp = run_git(first.path, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%aI|%cI").strip().split("|")
    bot = f"{git.BOT_IDENTITY.name} <{git.BOT_IDENTITY.email}>"
    assert stamp == [bot, bot, IMPORT_DATE, IMPORT_DATE]
    # A changed tree is another base, of course.
    (second.path / "minisglang" / "extra.py").write_text("X = 1\n")
    changed = git.commit_all(second.path, "Import the bundled example repository", date=IMPORT_DATE)
    assert changed != first.base_commit


def test_a_clean_checkout_on_a_branch_is_used_in_place(repos: Repos, tmp_path: Path) -> None:
    prepared = prepare(
        str(repos.checkout), "sglang", "https://github.com/sgl-project/sglang", tmp_path / "run"
    )
    assert (
        prepared.path == repos.checkout
        and prepared.base_commit == repos.base_sha
        and prepared.branch == "main"
    )
    assert not (tmp_path / "run").exists()


def test_a_dirty_or_detached_checkout_is_refused(repos: Repos, tmp_path: Path) -> None:
    (repos.checkout / "pkg" / "layers.py").write_text("# edited\n")
    with pytest.raises(GitError, match=r"has uncommitted changes \(pkg/layers.py\): commit or stash them"):
        prepare(str(repos.checkout), "example", "", tmp_path / "run")
    run_git(repos.checkout, "checkout", "--quiet", "--", "pkg/layers.py")
    run_git(repos.checkout, "checkout", "--quiet", "--detach", "HEAD")
    with pytest.raises(GitError, match="detached HEAD: check out the branch"):
        prepare(str(repos.checkout), "example", "", tmp_path / "run")
    with pytest.raises(ConfigError, match="no such directory"):
        prepare(str(tmp_path / "nowhere"), "example", "", tmp_path / "run")
    with pytest.raises(GitError, match="not a git checkout"):
        prepare(str(tmp_path), "example", "", tmp_path / "run")


def test_a_url_or_bare_repository_is_cloned_under_the_run(repos: Repos, tmp_path: Path) -> None:
    assert (
        is_remote(str(repos.upstream)) and is_remote("https://github.com/x/y") and is_remote("git@h:x/y.git")
    )
    assert not is_remote(str(repos.checkout))
    prepared = prepare(f"file://{repos.upstream}", "sglang", "", tmp_path / "run")
    assert prepared.path == tmp_path / "run" / "upstream" and prepared.base_commit == repos.base_sha
    with pytest.raises(git.RemoteUnreachable):
        prepare(f"file://{tmp_path}/missing.git", "sglang", "", tmp_path / "run2")


@pytest.mark.skipif(
    not (cache_dir() / "lmdeploy-0.10.2").is_dir(),
    reason="the lmdeploy 0.10.2 release is not in the source cache",
)
def test_a_release_becomes_a_committed_tree(tmp_path: Path) -> None:
    prepared = prepare("pypi:lmdeploy==0.10.2", "lmdeploy", "", tmp_path / "run")
    assert (prepared.path / "lmdeploy" / "pytorch").is_dir()
    assert prepared.base_commit == git.head_commit(prepared.path) and not git.is_dirty(prepared.path)
    assert (
        prepare("pypi:lmdeploy==0.10.2", "lmdeploy", "", tmp_path / "run2").base_commit
        == prepared.base_commit
    )


@pytest.mark.parametrize(
    ("source", "profile", "package_path"),
    [
        ("pypi:sglang==0.5.23", "sglang", "python/sglang/srt/layers/activation.py"),
        ("pypi:lmdeploy==0.18.0", "lmdeploy", "lmdeploy/pytorch/backends/default/activation.py"),
    ],
)
def test_a_release_is_laid_out_as_its_repository_and_tagged(
    source: str, profile: str, package_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unpacked release has the package at its top; SGLang's repository keeps it under python/, so the
    patch's paths must be python/sglang/...; the base commit carries the release's tag (v<version>), the name
    upstream has for it. A stand-in tree replaces the download: the layout is what is checked here."""
    import extractors.release_sources as release_sources

    inner = Path(package_path.removeprefix("python/"))
    package = inner.parts[0]
    tree = tmp_path / "unpacked"
    (tree / inner).parent.mkdir(parents=True)
    (tree / inner).write_text("def f(x):\n    return x\n")
    (tree / f"{package}-0.0.dist-info").mkdir()
    monkeypatch.setattr(release_sources, "fetch_release", lambda requirement: tree)
    prepared = prepare(source, profile, "", tmp_path / "run")
    tracked = run_git(prepared.path, "ls-files").split()
    assert package_path in tracked
    tag = release_tag(source)
    assert tag == "v" + source.split("==")[1]
    assert run_git(prepared.path, "rev-parse", f"{tag}^{{commit}}").strip() == prepared.base_commit


def test_only_a_release_has_a_tag() -> None:
    assert release_tag("pypi:sglang==0.5.23") == "v0.5.23"
    assert release_tag("example") == "" and release_tag("https://github.com/sgl-project/sglang") == ""
