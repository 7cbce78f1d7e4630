"""The propose stage: the bundle in RUN/pr/ always; with --open-pr, the PR opened or updated through the
forge (kernelbot.propose.open_or_update decides open / update / skip / refuse from what the forge holds).

Nothing is proposed from a verification that found a broken test: the verdict in RUN/verify.json is read
again here, whatever target.toml says. When the tests could not run at all (the engine's dependencies are not
installed here) the bundle is written, saying so, and no pull request is opened from it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelbot import git
from kernelbot.engines.model import Profile
from kernelbot.errors import ConfigError
from kernelbot.target import run_dir as layout
from kernelbot.target.options import TargetOptions
from kernelbot.target.records import (
    EvolveRecord,
    IntegrateRecord,
    ProposeRecord,
    PullRequestRecord,
    VerifyRecord,
)
from kernelbot.target.repo import EXAMPLE_SOURCE, release_tag
from kernelbot.target.runner import ProposalRefused, RunContext

if TYPE_CHECKING:
    from kernelbot.forge.github import GitHubForge
    from kernelbot.propose.evidence import Evidence

DEFAULT_FORK_REMOTE = "fork"


def propose(ctx: RunContext, integration: IntegrateRecord) -> ProposeRecord:
    from kernelbot.propose import build_evidence, open_or_update, write_bundle

    state, options, profile = ctx.state, ctx.options, ctx.profile
    verify_data = layout.read_verify_table(ctx.run_dir, state.record(VerifyRecord).report)
    if not verify_data.get("ok", False):
        raise ProposalRefused(str(verify_data.get("refusal") or "verification did not pass"))
    base = state.repo.base_commit
    worktree = state.resolve(integration.worktree)
    ctx.view.step("writing the bundle")
    evidence = build_evidence(
        search_dir=state.resolve(state.record(EvolveRecord).search_dir),
        task_dir=ctx.task_dir(),
        profile=profile,
        integration=integration,
        verify=verify_data,
        repo_url=profile.repo_url or state.repo.source,
        base_sha=base,
        base_branch=state.repo.branch or profile.default_branch or "main",
        function=state.function,
        op_slug=integration.op_slug,
        reproduce=reproduce_command(ctx),
        confirm=ctx.confirmation(),
        base_ref=release_tag(state.repo.source),
        search_s=state.record(EvolveRecord).elapsed_s,
    )
    bundle = write_bundle(
        ctx.run_dir, evidence, profile, git.diff_against(worktree, base), secret_envs=(options.token_env,)
    )
    outcome = ProposeRecord(
        bundle=state.relative(bundle.dir),
        branch=bundle.branch,
        kernel_hash=evidence.op.kernel_hash,
        title=bundle.title,
    )
    if not options.open_pr:
        return outcome
    refusal = pr_refusal(verify_data, evidence)
    if refusal:
        raise ProposalRefused(f"{refusal}. The bundle is in {bundle.dir}")
    repo = state.resolve(state.repo.path)
    fork = options.fork or _default_fork(repo, profile)
    ctx.view.step(f"proposing on {profile.repo_url} from {git.redact_url(git.remote_url(repo, fork))}")
    forge = make_forge(options, profile)
    result = open_or_update(
        bundle, profile, forge, repo, fork=fork, token_env=options.token_env, max_open=options.max_open
    )
    pr = PullRequestRecord(
        action=result.action,
        reason=result.reason,
        number=result.number,
        url=result.url,
        pushed_sha=result.pushed_sha or None,
    )
    return replace(outcome, pr=pr)


def pr_refusal(verify_data: Mapping[str, Any], evidence: Evidence) -> str | None:
    """Why no pull request may be opened from a written bundle, or None. The bundle itself is kept: it is
    the user's to study, but a maintainer should not have to close a PR the evidence already condemns."""
    tests = verify_data.get("tests") or {}
    if tests.get("cannot_run"):
        return (
            f"no pull request is opened from a change whose tests could not run: {tests['cannot_run']}; "
            f"{tests.get('advice') or 'install the engine and its dependencies'}"
        )
    slower = evidence.microbenchmarks.not_faster_than_current
    if slower:
        return (
            "no pull request is opened from a kernel that does not beat what the engine runs today: "
            f"not faster than its current path in {', '.join(slower)} (fresh-process bounds below 1)"
        )
    e2e = evidence.e2e
    if e2e.regressed:
        return (
            f"no pull request is opened from a change that made the end-to-end benchmark worse: {e2e.metric} "
            f"{e2e.delta_pct:+.1f} % ({e2e.confidence_pct} % CI [{e2e.ci_low_pct:+.1f} %, "
            f"{e2e.ci_high_pct:+.1f} %])"
        )
    return None


def make_forge(options: TargetOptions, profile: Profile) -> GitHubForge:
    """The forge of the profile's upstream. Its API URL: --github-api, else $KERNELBOT_GITHUB_API, else the
    profile's api_url (kernelbot.forge.github.resolve_api_url)."""
    from kernelbot.forge import GitHubForge

    return GitHubForge.for_profile(profile, api_url=options.github_api, token_env=options.token_env)


def reproduce_command(ctx: RunContext) -> str:
    """The one line that runs this whole road again."""
    argv = ["kernelbot", "target", ctx.state.profile, "--function", ctx.state.function]
    if ctx.state.repo.source != EXAMPLE_SOURCE:
        argv += ["--repo", ctx.state.repo.source]
    if ctx.options.spec is not None:
        argv += ["--spec", str(ctx.options.spec)]
    return shlex.join(argv)


def _default_fork(repo: Path, profile: Profile) -> str:
    name = profile.fork_remote or DEFAULT_FORK_REMOTE
    if git.remote_url(repo, name) != name:  # a remote of that name exists
        return name
    raise ConfigError(
        f"--open-pr needs your fork: pass --fork URL (or add a git remote named {name!r} to {repo})"
    )
