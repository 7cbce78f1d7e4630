"""tune:compile — the Inductor seed launched as torch.compile launches each shape.

The Inductor seed is traced once with dynamic shapes and starts from Inductor's first config for every size
(evolution.writers.inductor.host). The compile baseline it is judged against compiles each shape on its own
and autotunes there: at 4096 x 7168 on an H200, SGLang's RMSNorm seed trailed compile by 11 % with
compile's very kernel body, and compile's launch there closed it (docs/results/2026-12-07-h200.md §1).
Launch tuning walks one step at a time from the seed's launch and may not get there in a short search.

This move asks torch.compile itself: evolution.writers.inductor.compile_launches compiles the reference as
the baseline does, case by case, on the search's GPU (one subprocess per run) and reports the config each
kernel launched with. For the seed (its knobs `K0_XBLOCK`, `BF16_K1_NUM_WARPS`...), each distinct pick
becomes one child: the seed with those knobs set, the largest case's pick first. A kernel compile wrote in
another kind at that shape (persistent where the seed loops) cannot be had by a launch and is left as it
is. Children win the sizes they were picked at; bucket crossover then routes each size to its launch, as
one kernel with a launch table.

A search on a CPU goes without it (evolution.operators): there is nothing to autotune.
"""

from __future__ import annotations

import ast
import asyncio
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluators.gpu_lock import lock_dir
from evaluators.task import Task
from evolution.dedup import candidate_sha
from evolution.mutators.base import failed
from evolution.mutators.inductor_seed import OPERATOR as INDUCTOR_SEED
from evolution.mutators.tuning_sites import ParsedCandidate, Site, valid_value
from evolution.source_work import in_source_thread
from evolution.types import MutationOutcome, MutationRequest, Program
from evolution.writers.inductor.compile_launches import CaseLaunches, CompileLaunchReport, kernel_kind
from evolution.writers.inductor.host import LAUNCH_KNOB
from evolution.writers.inductor.render import variant_tag
from evolution.writers.tracing.launch import run_tracer

OPERATOR = "tune:compile"
# torch.compile's config keys -> the seed's knob suffixes.
_KNOB_OF = {"num_warps": "NUM_WARPS", "num_stages": "NUM_STAGES"}


@dataclass(frozen=True)
class SeedLaunch:
    """One kernel launch of an Inductor-seeded candidate: the kernel and the prefix of its knobs."""

    kernel: str  # `_red_fused_add_mean_0` (with `_bf16` where the seed has one host function per dtype)
    prefix: str  # `K0_`, `BF16_K0_`
    kind: str


@dataclass(frozen=True)
class LaunchChange:
    cases: tuple[str, ...]  # the cases torch.compile launched this way
    changes: dict[str, int]  # site key -> value


def seed_launches(source: str) -> list[SeedLaunch]:
    """The launches of `source` whose warps are a seed knob (`num_warps=K0_NUM_WARPS`), in the order of
    their knobs (dtype tag, then kernel index: the order Inductor launches them in)."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        return []
    found: list[SeedLaunch] = []
    for node in ast.walk(module):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        kernel = node.func.value
        warps = next((k.value for k in node.keywords if k.arg == "num_warps"), None)
        if not isinstance(kernel, ast.Name) or not isinstance(warps, ast.Name):
            continue
        knob = LAUNCH_KNOB.match(warps.id)
        kind = kernel_kind(kernel.id)
        if knob and kind != "other":
            found.append(SeedLaunch(kernel.id, knob.group(1), kind))
    return sorted(found, key=lambda launch: _order(launch.prefix))


def _order(prefix: str) -> tuple[str, int]:
    tag, _, index = prefix.rstrip("_").rpartition("K")
    return tag, int(index)


def launch_changes(source: str, sites: list[Site], report: CompileLaunchReport) -> list[LaunchChange]:
    """Each distinct launch torch.compile chose, as changes to `source`'s knobs: the largest case's first,
    cases that chose alike merged, none that leaves the parent as it is."""
    launches = seed_launches(source)
    knobs = {s.name: s for s in sites if s.key.startswith("name:")}
    merged: dict[tuple[tuple[str, int], ...], list[str]] = {}
    ordered = sorted(report.cases.items(), key=lambda item: (-item[1].elements, item[0]))
    for name, case in ordered:
        changes = _case_changes(case, launches, knobs)
        if changes:
            merged.setdefault(tuple(sorted(changes.items())), []).append(name)
    return [LaunchChange(tuple(cases), dict(key)) for key, cases in merged.items()]


def _case_changes(case: CaseLaunches, launches: list[SeedLaunch], knobs: dict[str, Site]) -> dict[str, int]:
    tag = variant_tag(case.variant).upper() + "_"
    tagged = [launch for launch in launches if launch.prefix.startswith(tag)]
    own = tagged or [launch for launch in launches if launch.prefix.startswith("K")]
    changes: dict[str, int] = {}
    for position, compiled in enumerate(case.launches):
        name = "_" + compiled.kernel.removeprefix("triton_")
        seed = next((s for s in own if s.kernel in (name, f"{name}_{tag[:-1].lower()}")), None)
        if seed is None and len(own) == len(case.launches):  # renamed between the two traces: by order
            seed = own[position]
        if seed is None or seed.kind != compiled.kind:  # another structure at this shape: not a launch
            continue
        for key, value in compiled.config.items():
            site = knobs.get(seed.prefix + _KNOB_OF.get(key, key))
            if site is not None and site.value != value and valid_value(site.kind, value):
                changes[site.key] = value
        minimum = knobs.get(seed.prefix + "MIN_XBLOCK")  # a 1-D pointwise launch's per-call floor
        block = compiled.config.get("XBLOCK")
        if minimum is not None and block is not None and minimum.value != block:
            changes[minimum.key] = block  # floor = block: the launch is compile's at every size
    return changes


class CompileLaunchMutator:
    """The move over the Inductor seed itself: its children are the seed with each launch compile chose.

    The recording starts once an Inductor seed is in the archive (a task Inductor cannot seed costs no GPU
    time), beside the search's other moves, and holds the GPU lock only while it compiles and autotunes.
    The seed is a parent for this move once the recording is done, so no move waits on it; from then on the
    move is asked before the weighted draw (evolution.moves.asked_first), so that a short search times its
    children next."""

    name = OPERATOR
    needs_correct_parent = True  # a launch never mends a wrong kernel
    exhaustion_ignores_inspirations = True  # compile's launches and the parent fix the answer
    asked_first = True

    def __init__(
        self,
        *,
        device: str = "cpu",
        timeout_s: float = 600.0,
        python: str | None = None,
        seen: Callable[[str], bool] | None = None,
    ) -> None:
        self.device = device
        self.timeout_s = timeout_s
        self.python = python or sys.executable
        self.seen = seen  # the run's duplicate check, when the controller hands it over
        self._task: Task | None = None
        self._reports: dict[str, asyncio.Future[CompileLaunchReport]] = {}
        self._proposed: set[str] = set()

    def can_seed(self) -> bool:
        return False

    def start(self, task: Task) -> None:
        """The run's task (the controller calls this as the run starts)."""
        self._task = task

    def accepts_program(self, program: Program) -> bool:
        """The Inductor seed only (its descendants carry launches the search chose, which compile's would
        undo; bucket crossover combines them with the seed's children instead), once compile's launches
        are recorded. The first sight of the seed starts the recording."""
        if program.operator != INDUCTOR_SEED or self._task is None or not seed_launches(program.source):
            return False
        recording = self._reports.get(str(self._task.root))
        if recording is None:
            try:
                recording = self._recording(self._task)
            except RuntimeError:  # no event loop runs (a caller outside a search): nothing is started
                return False
        return recording.done()

    async def mutate(self, request: MutationRequest) -> MutationOutcome:
        parent = request.parent
        if parent is None:
            return failed(OPERATOR, "compile's launches need a parent candidate (they write no first one)")
        if parent.operator != INDUCTOR_SEED or not seed_launches(parent.source):
            return failed(OPERATOR, "the parent is not the Inductor seed", exhausted=True)
        report = await asyncio.shield(self._recording(request.task))
        if report.error or not report.cases:
            why = report.error or "torch.compile launched no kernel on any case"
            return failed(OPERATOR, f"no compile launches: {why}", exhausted=True)
        return await in_source_thread(self._child, parent.source, request.task.entry, report)

    def _child(self, source: str, entry: str, report: CompileLaunchReport) -> MutationOutcome:
        parsed = ParsedCandidate(source)
        changes = launch_changes(source, parsed.sites(), report)
        for change in changes:
            child = parsed.with_changes(change.changes)
            sha = candidate_sha(child, entry)
            if sha in self._proposed or (self.seen is not None and self.seen(sha)):
                continue
            self._proposed.add(sha)
            return MutationOutcome(operator=OPERATOR, child_source=child)
        if not changes:
            why = "torch.compile launched the seed's kernels as the seed does, or wrote other kinds of kernel"
        else:
            why = "every launch torch.compile chose was already proposed"
        return failed(OPERATOR, why, exhausted=True)

    def _recording(self, task: Task) -> asyncio.Future[CompileLaunchReport]:
        """The task's recording: started on the first call (in the running event loop), shared by every
        later one."""
        root = str(task.root)
        if root not in self._reports:
            self._reports[root] = asyncio.get_running_loop().create_task(self._record(root))
        return self._reports[root]

    async def _record(self, task_dir: str) -> CompileLaunchReport:
        """Never raises: a recording that fails is a report with the error, which the move says once."""
        if not self.device.startswith("cuda"):
            return CompileLaunchReport(self.device, error="torch.compile's autotuning needs a GPU")
        try:
            return await self._recorded(task_dir)
        except OSError as exc:  # the box or the interpreter cannot start
            return CompileLaunchReport(self.device, error=f"the recording process did not start: {exc}")
        except (ValueError, KeyError, TypeError) as exc:  # a report this code cannot read: our bug
            return CompileLaunchReport(self.device, error=f"unreadable report: {type(exc).__name__}: {exc}")

    async def _recorded(self, task_dir: str) -> CompileLaunchReport:
        with tempfile.TemporaryDirectory(prefix="kb-compile-launch-") as workdir:
            done = await run_tracer(
                "evolution.writers.inductor.compile_launches",
                Path(task_dir),
                Path(workdir),
                what="torch.compile's launches",
                timeout_s=self.timeout_s,
                args=("--device", self.device),
                python=self.python,
                gpu=True,
                writable=(lock_dir(),),  # the evaluator's GPU lock, shared with its workers
                env={
                    "TORCHINDUCTOR_CACHE_DIR": str(Path(workdir) / "inductor-cache"),
                    "TRITON_CACHE_DIR": str(Path(workdir) / "triton-cache"),
                },
            )
        if done.timed_out:
            return CompileLaunchReport(self.device, error=f"took longer than {self.timeout_s:.0f} s")
        if done.report is None:
            tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
            return CompileLaunchReport(
                self.device, error=f"the recording process failed (exit {done.returncode}): {tail[0]}"
            )
        return CompileLaunchReport.from_json(done.report)
