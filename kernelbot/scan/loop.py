"""One scan: rank, sync from the forge, refresh the open PRs, propose the best region not proposed yet.

    outcome = run_scan(ScanOptions(profile="sglang", open_pr=True, fork=...))

Under the repository's scan lock (kernelbot.scan.lock), in STATE (default
$KERNELBOT_HOME/scans/<owner>-<name>):

1. bring the checkout up to date (kernelbot.scan.checkout); its head is this scan's base commit;
2. rank its regions (kernelbot.scan.ranking), or reuse the ranking an earlier scan made of this commit;
3. read the forge: the open PRs, and each region's branch as the scan comes to it; the ledger's PRs are
   rewritten from that (the forge is the truth, the ledger its cache);
4. for each open kernelbot PR (kernelbot.scan.refresh): leave one comment and stop when someone else
   pushed to it; refresh it when its base moved or a better kernel is known;
5. walk the ranking (kernelbot.scan.queue): skip what is proposed, merged, refused or failed on this base,
   run `kernelbot target` on the best remaining regions while slots are free (--max-new-prs, --max-open,
   --max-attempts);
6. print what it did and why it skipped the others, and write STATE/last-scan.json.
"""

from __future__ import annotations

import fnmatch
import shutil
from pathlib import Path
from typing import Any

from evaluators import secrets
from kernelbot import git
from kernelbot.console import console
from kernelbot.engines.model import Profile
from kernelbot.errors import ConfigError, GitError
from kernelbot.forge.base import Forge
from kernelbot.integrate.naming import qualname_slug
from kernelbot.scan.checkout import ScanRepo, prepare_scan_repo, scan_source
from kernelbot.scan.forge_view import ForgeView, ledger_view, read_forge, sync_ledger
from kernelbot.scan.ledger import DONE, HANDS_OFF, LEDGER_FILE, Ledger
from kernelbot.scan.lock import LOCK_FILE, ScanLock
from kernelbot.scan.options import ScanOptions, default_state_dir
from kernelbot.scan.outcome import RefreshOutcome, ScanOutcome
from kernelbot.scan.queue import Standing, open_slots, region_status
from kernelbot.scan.ranking import Ranking, Region, rank_regions, ranking_recipe
from kernelbot.scan.refresh import HANDS_OFF_TOPIC, RefreshAction, hands_off_comment, plan_refresh
from kernelbot.scan.runs import NEW, REFRESH, RegionRun, run_dir_for, run_region, seeds_for, target_options

RANK_TREE = ".rank-tree"  # a clean work tree of the base commit the benchmark is profiled in
BRANCH_PREFIX = "kernelbot/"


def say(message: str) -> None:
    console.print(f"[scan] {message}", markup=False, highlight=False)


def branch_for(region: Region) -> str:
    """The PR branch kernelbot proposes `region` on (kernelbot.propose.Bundle.branch)."""
    return BRANCH_PREFIX + qualname_slug(region.qualname)


def check_options(options: ScanOptions) -> None:
    if options.max_new_prs < 0:
        raise ConfigError(f"--max-new-prs {options.max_new_prs}: expected 0 or more")
    for flag, value in (("--max-open", options.max_open), ("--max-attempts", options.max_attempts)):
        if value < 1:
            raise ConfigError(f"{flag} {value}: expected 1 or more")
    if options.max_refreshes < 0:
        raise ConfigError(f"--max-refreshes {options.max_refreshes}: expected 0 or more")
    if options.top < 1:
        raise ConfigError(f"--top {options.top}: expected 1 or more")
    if options.fork and not options.open_pr:
        raise ConfigError("--fork names where to push the PR's branch: it needs --open-pr")
    if options.open_pr:
        from kernelbot.forge.github import read_token

        read_token(options.token_env)  # missing: one line now, not after a profile run


def run_scan(options: ScanOptions) -> ScanOutcome:
    from kernelbot.engines import load_profile

    profile = load_profile(options.profile, config=options.config)
    check_options(options)
    state_dir = (
        (options.state_dir or default_state_dir(profile.repo_url, profile.name)).expanduser().resolve()
    )
    with ScanLock(state_dir / LOCK_FILE, profile.repo_url or profile.name):
        ledger = Ledger.open(state_dir / LEDGER_FILE)
        try:
            return Scan(options, profile, state_dir, ledger).run()
        finally:
            ledger.close()


class Scan:
    def __init__(self, options: ScanOptions, profile: Profile, state_dir: Path, ledger: Ledger) -> None:
        self.options = options
        self.profile = profile
        self.state_dir = state_dir
        self.ledger = ledger
        self.forge: Forge | None = None
        self.repo: ScanRepo | None = None
        self.region_of_branch: dict[str, str] = {}

    # --- the steps ----------------------------------------------------------------------------------------

    def run(self) -> ScanOutcome:
        source = scan_source(self.options.repo, self.profile)
        if not source:
            raise ConfigError(f"the {self.profile.name} profile names no repository: pass --repo PATH|URL")
        self.ledger.claim_source(source)
        repo = self.repo = prepare_scan_repo(source, self.profile, self.state_dir)
        say(
            f"{self.profile.name}: {source} at {repo.base_sha[:12]} ({repo.branch or 'detached'}); "
            f"state in {self.state_dir}"
        )
        scan_id = self.ledger.start_scan(repo.base_sha)
        ranking, cached = self._ranking(repo)
        regions = [r for r in ranking.regions if self._wanted(r.target)]
        self.regimes = {r.target: r for r in regions if r.regime}  # what a task made from each is judged in
        self.region_of_branch = {**self.ledger.branches(), **{branch_for(r): r.target for r in regions}}
        self.ledger.see_regions(((r, branch_for(r)) for r in regions), repo.base_sha)
        view, forge_note = self._read_forge()
        outcome = ScanOutcome(
            self.profile.name,
            source,
            repo.base_sha,
            repo.branch,
            self.state_dir,
            ranking,
            cached,
            forge_note,
            left_out=len(ranking.regions) - len(regions),
        )
        self._refresh_open_prs(view, outcome)
        self._walk_queue(regions, view, outcome)
        sync_ledger(self.ledger, view)
        outcome.summary = self._summary(outcome)
        self.ledger.finish_scan(scan_id, outcome.to_dict())
        outcome.write()
        return outcome

    def _ranking(self, repo: ScanRepo) -> tuple[Ranking, bool]:
        recipe, why_static = ranking_recipe(self.profile)
        cached = self.ledger.cached_ranking(repo.base_sha, recipe)
        if cached is not None:
            return cached, True
        say(f"ranking: profiling `{recipe}`" if why_static is None else f"ranking statically: {why_static}")
        tree = self.state_dir / RANK_TREE
        _remove_tree(repo.path, tree)
        git.add_worktree(repo.path, tree, repo.base_sha)
        try:
            ranking = rank_regions(tree, self.profile, repo.base_sha, timeout=self.options.profile_timeout)
        finally:
            _remove_tree(repo.path, tree)
        # Kept under the recipe asked for: a benchmark that failed on this commit is not run again on it.
        self.ledger.store_ranking(_under_recipe(ranking, recipe))
        return ranking, False

    def _wanted(self, target: str) -> bool:
        only, exclude = self.options.only, self.options.exclude
        if only and not any(fnmatch.fnmatchcase(target, p) for p in only):
            return False
        return not any(fnmatch.fnmatchcase(target, p) for p in exclude)

    def _read_forge(self) -> tuple[ForgeView, str]:
        if not self.options.open_pr and not secrets.get(self.options.token_env):
            return ledger_view(self.ledger), (
                f"as the ledger last synced them (no ${self.options.token_env} to ask the forge)"
            )
        from kernelbot.forge import GitHubForge

        self.forge = GitHubForge.for_profile(self.profile, token_env=self.options.token_env)
        view = read_forge(self.forge)
        opened = view.open_kernelbot()
        listed = ", ".join(f"#{pr.number}" for pr in opened) or "none"
        return view, f"read from {self.forge.repo} now; kernelbot's open PRs: {listed}"

    def _refresh_open_prs(self, view: ForgeView, outcome: ScanOutcome) -> None:
        assert self.repo is not None
        budget = self.options.max_refreshes
        for pr in view.open_kernelbot():
            marker = pr.marker
            assert marker is not None
            target = self.region_of_branch.get(pr.head_branch)
            plan = plan_refresh(
                pr,
                base_sha=self.repo.base_sha,
                target=target,
                pr_kernel=self.ledger.kernel(marker.kernel_hash),
                best_kernel=self.ledger.best_kernel(target) if target else None,
                runs_on_base=self.ledger.runs(target, self.repo.base_sha) if target else (),
            )
            if plan.action is RefreshAction.HANDS_OFF:
                result = self._hands_off(pr)
            elif plan.action is not RefreshAction.REFRESH:
                result = "nothing to do"
            elif not self.options.open_pr:
                result = "not refreshed: run with --open-pr"
            elif budget < 1:
                result = (
                    f"not refreshed now: {self.options.max_refreshes} refresh(es) per scan (--max-refreshes)"
                )
            else:
                budget -= 1
                run = self._run(plan.target or "", purpose=REFRESH, extra_seed=plan.seed)
                outcome.runs.append(run)
                result = self._hands_off(pr) if run.status == HANDS_OFF else run.describe()
            outcome.refreshes.append(RefreshOutcome(plan, result))

    def _hands_off(self, pr: Any) -> str:
        if self.forge is None or not self.options.open_pr:
            return "left alone (the comment saying so is left with --open-pr)"
        comment = self.forge.ensure_comment(pr.number, HANDS_OFF_TOPIC, hands_off_comment(pr))
        return f"left alone; comment {comment.action} ({comment.url})"

    def _walk_queue(self, regions: list[Region], view: ForgeView, outcome: ScanOutcome) -> None:
        assert self.repo is not None
        options = self.options
        slots, slot_reason = open_slots(
            view.open_kernelbot(),
            max_open=options.max_open,
            max_new=options.max_new_prs,
            open_pr=options.open_pr,
        )
        refreshed = {r.plan.pr.number: r for r in outcome.refreshes}
        proposed = attempts = 0
        for index, region in enumerate(regions):
            done = proposed >= slots or attempts >= options.max_attempts
            if index >= options.top and done:
                outcome.not_looked_at = len(regions) - index
                break
            branch = branch_for(region)
            status = region_status(
                region,
                branch,
                view.on_branch(branch),
                self.ledger.runs(region.target, self.repo.base_sha),
                open_pr=options.open_pr,
            )
            if status.standing is Standing.PROPOSED and status.pr and status.pr.number in refreshed:
                status = status.but(
                    Standing.PROPOSED, f"{status.reason}; {refreshed[status.pr.number].plan.reason}"
                )
            elif status.standing is Standing.ELIGIBLE and proposed >= slots:
                status = status.but(Standing.WAITING, f"not proposed now: {slot_reason}")
            elif status.standing is Standing.ELIGIBLE and attempts >= options.max_attempts:
                reason = f"not proposed now: this scan started {attempts} target run(s) (--max-attempts)"
                status = status.but(Standing.WAITING, reason)
            elif status.standing is Standing.ELIGIBLE:
                attempts += 1
                run = self._run(region.target, purpose=NEW)
                outcome.runs.append(run)
                if run.status == DONE and run.pr_action in ("", "opened", "updated"):
                    proposed += 1
                status = status.but(Standing.CHOSEN, run.describe())
            outcome.regions.append(status)

    def _run(self, target: str, *, purpose: str, extra_seed: Path | None = None) -> RegionRun:
        assert self.repo is not None
        options = self.options
        branch = BRANCH_PREFIX + qualname_slug(target.rpartition(":")[2])
        seeds = [*seeds_for(target, options.search.seed_files), *([extra_seed] if extra_seed else [])]
        run_dir = run_dir_for(self.state_dir, branch, self.repo.base_sha)
        say(f"{'refreshing' if purpose == REFRESH else 'proposing'} {target}: kernelbot target in {run_dir}")
        target_opts = target_options(
            profile=self.profile.name,
            target=target,
            run_dir=run_dir,
            repo=self.repo.path,
            search=options.search,
            seeds=list(dict.fromkeys(seeds)),
            open_pr=options.open_pr,
            fork=options.fork,
            token_env=options.token_env,
            max_open=options.max_open,
            benchmark_runs=options.benchmark_runs,
            config=options.config,
            confirm=options.confirm,
            regime=self._regime(target),
        )
        return run_region(self.ledger, target_opts, base_sha=self.repo.base_sha, purpose=purpose)

    def _regime(self, target: str) -> tuple[str, str] | None:
        """(regime, where it comes from) for a task made from a region the GPU profile measured."""
        region = getattr(self, "regimes", {}).get(target)
        if region is None:
            return None
        where = (
            f"{region.graph_share:.0%} of its GPU time in CUDA graph replays"
            if region.regime == "graph"
            else "its GPU time eager, outside CUDA graphs"
        )
        return region.regime, f"scan: {where} under the profiled benchmark"

    def _summary(self, outcome: ScanOutcome) -> str:
        if outcome.runs:
            return "; ".join(f"{run.purpose} {run.target}: {run.describe()}" for run in outcome.runs)
        waiting = [s for s in outcome.regions if s.standing is Standing.WAITING]
        if waiting:
            return f"proposed nothing: {waiting[0].reason.removeprefix('not proposed now: ')}"
        if not outcome.regions:
            return "proposed nothing: no region to rank" + (
                " (all left out by --only / --exclude)" if outcome.left_out else ""
            )
        counts: dict[str, int] = {}
        for status in outcome.regions:
            counts[status.standing.value] = counts.get(status.standing.value, 0) + 1
        listed = ", ".join(f"{n} {standing}" for standing, n in sorted(counts.items()))
        return (
            "proposed nothing: every ranked region is proposed, merged, refused or failed on this base "
            f"commit ({listed})"
        )


def _under_recipe(ranking: Ranking, recipe: str) -> Ranking:
    return Ranking(ranking.base_sha, ranking.source, recipe, ranking.note, ranking.regions)


def _remove_tree(repo: Path, tree: Path) -> None:
    """A rank tree left by a killed scan is ours: removed before and after use."""
    try:
        git.remove_worktree(repo, tree)
    except GitError:
        shutil.rmtree(tree, ignore_errors=True)
        git.remove_worktree(repo, tree)
