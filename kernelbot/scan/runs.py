"""One `kernelbot target` run for a region, started by a scan, and what the ledger keeps of it.

The run lives in STATE/runs/<op-slug>-<base12>: one per region and base commit, so a scan that was killed
mid-run is continued (not restarted) by the next scan of the same commit, and a new base gets a fresh run.
The search starts from the seed files whose top-level functions include the region's entry (the name the
extractor gives it), and for a refresh from the best kernel the ledger knows.

A failure that is the region's (no kernel passed the evaluator, the change breaks a test, the function
cannot be extracted) is recorded and the scan goes on; one that is the setup's (a refused token, an
unreachable remote, a bad flag) is recorded and ends the scan, since every other region would meet it too.
A push refused because someone else pushed to the branch is neither: the PR is left to them.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evolution.search import SearchOverrides
from kernelbot.confirm.stoprule import StopRule
from kernelbot.errors import BackendUnavailable, ConfigError, KernelbotError, TransportError
from kernelbot.forge.errors import ForgeError
from kernelbot.git import LeaseRejected, RemoteUnreachable
from kernelbot.scan.ledger import DONE, FAILED, HANDS_OFF, KernelRecord, Ledger
from kernelbot.target.options import TargetOptions
from kernelbot.target.records import EvolveRecord, ExtractRecord, ProposeRecord
from kernelbot.target.run_dir import bundle_dir

RUNS_DIR = "runs"
NEW, REFRESH = "new", "refresh"
# Failures no other region would escape: they end the scan with their message.
SETUP_ERRORS: tuple[type[KernelbotError], ...] = (
    ConfigError,
    ForgeError,
    TransportError,
    RemoteUnreachable,
    BackendUnavailable,
)


@dataclass(frozen=True)
class RegionRun:
    """What a scan's target run came to."""

    target: str
    run_dir: Path
    purpose: str  # NEW | REFRESH
    status: str  # DONE | FAILED | HANDS_OFF
    error: str = ""
    kernel_hash: str = ""
    pr_action: str = ""  # "opened" | "updated" | "skipped" | "refused" | "" (no --open-pr)
    pr_number: int | None = None
    pr_url: str = ""
    pr_reason: str = ""

    def describe(self) -> str:
        if self.status == FAILED:
            return f"target failed: {self.error}"
        if self.status == HANDS_OFF:
            return f"left alone: {self.error}"
        if not self.pr_action:
            return f"bundle written: {bundle_dir(self.run_dir)}"
        where = f" #{self.pr_number}" if self.pr_number is not None else ""
        url = f" ({self.pr_url})" if self.pr_url and self.pr_action in ("opened", "updated") else ""
        return f"{self.pr_action}{where}{url}: {self.pr_reason}"

    def to_dict(self) -> dict[str, object]:
        data = dataclasses.asdict(self)
        data["run_dir"] = str(self.run_dir)
        return data


def run_dir_for(state_dir: Path, branch: str, base_sha: str) -> Path:
    return state_dir / RUNS_DIR / f"{branch.rpartition('/')[2]}-{base_sha[:12]}"


def seeds_for(target: str, seed_files: Sequence[Path]) -> tuple[Path, ...]:
    """The seed files that define the entry the extractor gives `target`'s function."""
    from extractors.method_to_function import entry_name_for

    entry = entry_name_for(target.rpartition(":")[2])
    chosen = []
    for path in seed_files:
        try:
            tree = ast.parse(path.read_text())
        except (OSError, SyntaxError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--seed {path}: cannot read it as Python ({exc})") from exc
        names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if entry in names:
            chosen.append(path)
    return tuple(chosen)


def run_region(
    ledger: Ledger,
    options: TargetOptions,
    *,
    base_sha: str,
    purpose: str,
) -> RegionRun:
    """Run `kernelbot target` as `options` say (options.out is the run directory) and record it."""
    from kernelbot.target.launch import run_target

    run_dir = Path(options.out or ".")
    target = options.function
    ledger.start_run(run_dir, target, base_sha, purpose)
    try:
        state = run_target(options)
    except LeaseRejected as exc:
        ledger.finish_run(run_dir, HANDS_OFF, error=str(exc))
        return RegionRun(target, run_dir, purpose, HANDS_OFF, error=str(exc))
    except SETUP_ERRORS as exc:
        ledger.finish_run(run_dir, FAILED, error=str(exc))
        raise
    except KernelbotError as exc:
        ledger.finish_run(run_dir, FAILED, error=str(exc))
        return RegionRun(target, run_dir, purpose, FAILED, error=str(exc))
    extract, evolve = state.record(ExtractRecord), state.record(EvolveRecord)
    propose = state.record(ProposeRecord)
    ledger.record_task(run_dir, target, extract.entry, extract.name, extract.inputs)
    kernel_hash = propose.kernel_hash
    ledger.record_kernel(
        KernelRecord(
            kernel_hash=kernel_hash,
            target=target,
            run_dir=str(run_dir),
            source_file=str(run_dir / evolve.kernel_file),
            score=evolve.score,
            speedup=evolve.speedup,
            backend=evolve.backend,
            base_sha=base_sha,
        )
    )
    pr = propose.pr
    result = RegionRun(
        target,
        run_dir,
        purpose,
        DONE,
        kernel_hash=kernel_hash,
        pr_action=pr.action if pr else "",
        pr_number=pr.number if pr else None,
        pr_url=(pr.url or "") if pr else "",
        pr_reason=pr.reason if pr else "",
    )
    ledger.finish_run(
        run_dir, DONE, kernel_hash=kernel_hash, pr_action=result.pr_action, pr_number=result.pr_number
    )
    return result


def target_options(
    *,
    profile: str,
    target: str,
    run_dir: Path,
    repo: Path,
    search: SearchOverrides,
    seeds: Sequence[Path],
    open_pr: bool,
    fork: str | None,
    token_env: str,
    max_open: int,
    benchmark_runs: int | None,
    config: Path | None,
    confirm: StopRule | None = None,
    regime: tuple[str, str] | None = None,  # (regime, where it comes from), from the GPU profile
) -> TargetOptions:
    return TargetOptions(
        profile=profile,
        function=target,
        repo=str(repo),
        out=run_dir,
        search=dataclasses.replace(search, seed_files=tuple(seeds)),
        benchmark_runs=benchmark_runs,
        confirm=confirm or StopRule(),
        open_pr=open_pr,
        fork=fork if open_pr else None,
        token_env=token_env,
        max_open=max_open,
        config=config,
        regime=regime[0] if regime else None,
        regime_from=regime[1] if regime else "",
    )
