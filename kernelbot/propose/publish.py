"""open_or_update: put a written bundle up as a pull request, or say why not.

    outcome = open_or_update(bundle, profile, forge, repo, fork=None, token_env="GITHUB_TOKEN")

1. Ask the forge what is there: the PRs on branch `kernelbot/<op-slug>` (every state) and the repository's
   open PRs, and decide (kernelbot.forge.decisions) before anything is pushed: a skipped or refused
   proposal pushes nothing, so an open PR is never changed by a run that leaves it alone.
2. To open or update: commit the bundle's patch.diff on the base commit, in a throwaway work tree of `repo`
   (what is pushed is exactly what the body describes), as kernelbot, and push it to the fork's branch with
   force-with-lease: expecting the commit the open PR's marker says kernelbot pushed when updating, the
   branch's current sha (or its absence) when opening. A push by anyone else since (a maintainer's fixup) is
   a LeaseRejected, never overwritten.
3. Open the PR, or update its title and body and keep one "refresh" comment saying what changed; the body's
   marker records the commit pushed.

The token is read from the environment by the forge and, for an HTTPS fork, handed to that one git push
through kernelbot.git's credential helper; it is never part of a URL, message or file.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kernelbot import git
from kernelbot.engines.model import Profile
from kernelbot.forge.base import Forge
from kernelbot.forge.decisions import DEFAULT_MAX_OPEN, Action, Decision, decide
from kernelbot.forge.marker import with_marker
from kernelbot.propose.bundle import Bundle

REFRESH_TOPIC = "refresh"


@dataclass(frozen=True)
class ProposeOutcome:
    action: str  # "opened" | "updated" | "skipped" | "refused"
    reason: str
    branch: str
    number: int | None = None
    url: str = ""
    pushed_sha: str = ""

    def describe(self) -> str:
        if self.action in ("opened", "updated"):
            return f"{self.action} #{self.number} ({self.url}): {self.reason}"
        where = f" (#{self.number})" if self.number is not None else ""
        return f"{self.action}{where}: {self.reason}"


def open_or_update(
    bundle: Bundle,
    profile: Profile,
    forge: Forge,
    repo: Path,
    *,
    fork: str | None = None,
    token_env: str = "GITHUB_TOKEN",
    max_open: int = DEFAULT_MAX_OPEN,
) -> ProposeOutcome:
    """Propose `bundle` (see the module docstring). `repo` is any checkout holding the base commit (the
    target run's work tree); `fork` is the contributor's fork as a git remote name of `repo`, URL or path
    (default: the profile's `fork_remote`); `max_open` is how many kernelbot PRs may be open in the
    repository at once."""
    fork = fork or profile.fork_remote
    branch = bundle.branch
    marker = bundle.marker
    branch_prs = forge.find_prs(branch, state="all")
    open_prs = forge.find_prs(None, state="open")
    decision = decide(marker, branch, branch_prs, open_prs, max_open=max_open)
    if decision.action in (Action.SKIP, Action.REFUSE):
        verb = "skipped" if decision.action is Action.SKIP else "refused"
        number = decision.pr.number if decision.pr else None
        return ProposeOutcome(verb, decision.reason, branch, number, decision.pr.url if decision.pr else "")

    expected = _lease(decision, repo, fork, branch, token_env)
    sha = _commit_and_push(bundle, repo, fork, branch, expected, token_env)
    body = forge.massage_markdown(with_marker(bundle.body, dataclasses.replace(marker, commit=sha)))
    if decision.action is Action.OPEN:
        pr = forge.create_pr(
            head_branch=branch, base_branch=bundle.evidence.repo.branch, title=bundle.title, body=body
        )
        return ProposeOutcome("opened", decision.reason, branch, pr.number, pr.url, sha)
    assert decision.pr is not None
    pr = forge.update_pr(decision.pr.number, title=bundle.title, body=body)
    forge.ensure_comment(
        pr.number,
        REFRESH_TOPIC,
        f"kernelbot refreshed this PR ({decision.reason}); the branch is now at `{sha[:12]}` and the "
        "description shows the new evidence.",
    )
    return ProposeOutcome("updated", decision.reason, branch, pr.number, pr.url, sha)


def _lease(decision: Decision, repo: Path, fork: str, branch: str, token_env: str) -> str | None:
    """The sha the fork's branch must still be at for the force push: when updating, the commit the open
    PR's marker says kernelbot pushed (a PR head alone would follow anyone's push); when opening, the
    branch's sha now (None: it must not exist)."""
    if decision.action is Action.UPDATE and decision.pr is not None:
        recorded = decision.pr.marker.commit if decision.pr.marker else ""
        if recorded or decision.pr.head_sha:
            return recorded or decision.pr.head_sha
    return git.remote_branch_sha(fork, branch, repo=repo, token_env=token_env)


def _commit_and_push(
    bundle: Bundle, repo: Path, fork: str, branch: str, expected: str | None, token_env: str
) -> str:
    evidence = bundle.evidence
    fork_target = git.remote_url(repo, fork)
    with tempfile.TemporaryDirectory(prefix="kernelbot-propose-") as tmp:
        tree = git.add_worktree(repo, Path(tmp) / "tree", evidence.repo.base_sha)
        try:
            git.apply_patch(tree, bundle.patch)
            git.commit_all(tree, commit_message(bundle))
            return git.push_with_lease(tree, fork_target, branch, expected, token_env=token_env)
        finally:
            git.remove_worktree(repo, tree)


def commit_message(bundle: Bundle) -> str:
    e = bundle.evidence
    return (
        f"{e.op.title}\n\n"
        f"Generated by kernelbot {e.environment.kernelbot} for {e.op.function} on {e.repo.base_sha[:12]}.\n"
        f"Kernel {e.op.kernel_hash[:12]}; the evidence is in the pull request's description.\n"
    )
