"""The confirmation: the search's winner timed again against every baseline column a PR shows, apart from
the search's own samples, each time in a fresh evaluation worker, until the stop rule decides.

    report = confirm(task_dir, kernel_source, ConfirmOptions(backend="triton-cuda"))

Why apart from the search: a search's winner is the largest of many noisy estimates (its own figures are
biased upward), measured while the search's other workers and often other searches shared the GPU. Here:
- every process is a new evaluation worker (evaluators.pool.WorkerPool: one candidate per process), drawing
  its own hidden seeds, so the inputs are re-drawn per process; the task's L2 state (task.toml `cache`) and
  both regimes are timed as thoroughly as the scored one (the search's short look at the other regime is not
  a figure a PR may print);
- the columns: eager (the task's reference), torch.compile of it, and the engine's current path where one is
  named (`current_path = "module:qualname"` in task.toml, or ConfirmOptions.current_path) and importable in
  the worker; the evaluator swaps the timed reference (TimingConfig.baseline) and still judges every call
  against the eager reference;
- the device's GPU lock (evaluators.gpu_lock) is held by this process for the whole confirmation, so no
  other kernelbot run times on the GPU meanwhile; up to ConfirmOptions.at_once processes run at once, their
  host work overlapping (inputs drawn on the CPU, graphs captured, torch.compile), and each one samples alone:
  its workers share a lock of the confirmation's own (TimingConfig.run_lock) that a worker holds shared
  while it uses the GPU and exclusively while it samples;
- processes are added per column until kernelbot.confirm.stoprule decides every case and regime.

On a backend that never times (Triton's interpreter) one process per column still runs (correctness, the
columns' availability, the JSON) and the report says speed was not measured on this machine.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluators.config import EvalConfig
from evaluators.result import EvalResult
from evaluators.stats import geometric_mean
from evaluators.task import load_task
from evaluators.timing.baselines import COMPILE, UNAVAILABLE, call_spec
from kernelbot.confirm.report import COLUMNS, CURRENT, EAGER, CellReport, ColumnReport, ConfirmReport
from kernelbot.confirm.stoprule import StopRule, all_decided, estimate, final

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

NOT_MEASURED_INTERPRETER = "not measured on this machine (CPU interpreter)"
CURRENT_PATH_KEY = "current_path"  # task.toml: the engine's current path for the function, module:qualname
# A column whose processes fail this many times in a row is given up (the reasons are in `failures`).
FAILURES_PER_COLUMN = 2
# The scored wall regime's cap in a confirmation process: the search ranks with a shorter look
# (TimingConfig.wall_time_cap_s), a claim is timed as long as a ~+-0.8 % interval takes on a ~10 us call.
CONFIRM_WALL_TIME_CAP_S = 0.2
# ...and the graph regime's (and the other regime's, sampled like the scored one): the search's look
# (TimingConfig.time_cap_s) is shorter, for its pace.
CONFIRM_TIME_CAP_S = 0.1
# Fresh processes at once where the confirmation times. One serving-size process on the H200 spent ~1.7 s of
# its ~30 s sampling; the rest was host work, which overlaps while the samples take turns (3 at once: ~12 s
# a process). Six fills the first round of the default rule's two timed columns (3 processes each).
PROCESSES_AT_ONCE = 6


@dataclass(frozen=True)
class ConfirmOptions:
    rule: StopRule = field(default_factory=StopRule)
    backend: str = "auto"
    device_index: int = 0
    current_path: str | None = None  # module:qualname; None: the task's `current_path`, if it names one
    # Without a timeable current path: what the engine runs today, in words, and why it has no column
    # (kernelbot.engines.current_path); empty: the engine names none.
    current_path_label: str = ""
    current_path_reason: str = ""
    # The engine runs the function inside a torch.compile region: the compile column times the kernel under
    # torch.compile too (TimingConfig.compile_candidate), so a call there is measured where it runs.
    kernel_compiled: bool = False
    hold_gpu: bool = True  # hold the device's GPU lock for the whole confirmation
    # Fresh processes at once where the confirmation times (and holds the GPU); elsewhere one at a time.
    at_once: int = PROCESSES_AT_ONCE
    config: EvalConfig | None = None  # the evaluator settings to start from (the search's); None: defaults


def current_path_of(task_dir: Path) -> str | None:
    """The engine's current path for the task's function, as task.toml names it (None: it names none)."""
    try:
        data = tomllib.loads((task_dir / "task.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    value = data.get(CURRENT_PATH_KEY)
    return str(value) if isinstance(value, str) and value.strip() else None


def confirmation_config(
    base: EvalConfig,
    baseline: str,
    *,
    caller_holds_gpu: bool,
    run_lock: str = "",
    timed: bool = True,
    compile_candidate: bool = False,
) -> EvalConfig:
    """The evaluator settings of one confirmation process: the search's, timing `baseline`, with the other
    regime sampled like the scored one, and correctness re-checked on one fresh seed without hidden sizes
    or the task's degenerate check (the search established both; this run is about speed), and both
    regimes sampled for as long as a claim needs (CONFIRM_TIME_CAP_S, CONFIRM_WALL_TIME_CAP_S: not the
    search's cheaper caps). Where nothing is timed (the interpreter) the re-check is the smallest case
    alone, without repeated calls: the process is there for the plumbing and the columns' availability, and
    the interpreter's minutes would buy nothing."""
    if not timed:
        base = replace(base, drift_calls=0, interpret_budget_s=0.0)
    t = base.timing
    graph_cap = max(t.time_cap_s, CONFIRM_TIME_CAP_S)
    timing = replace(
        t,
        baseline=baseline,
        compile_candidate=compile_candidate,
        caller_holds_gpu=caller_holds_gpu,
        run_lock=run_lock if caller_holds_gpu else "",
        time_cap_s=graph_cap,
        secondary_time_cap_s=max(t.secondary_time_cap_s, graph_cap),
        secondary_min_samples=max(t.secondary_min_samples, t.min_samples),
        wall_time_cap_s=max(t.wall_time_cap_s, CONFIRM_WALL_TIME_CAP_S),
    )
    return replace(base, timing=timing, seeds_per_case=1, hidden_cases=0, degenerate_check=False)


@dataclass
class _Column:
    name: str
    baseline: str
    label: str
    available: bool = True
    reason: str = ""
    processes: int = 0
    failures_in_a_row: int = 0
    # (case, regime) -> per-process (speedup, baseline µs, kernel µs)
    samples: dict[tuple[str, str], list[tuple[float, float, float]]] = field(default_factory=dict)
    params: dict[str, dict[str, object]] = field(default_factory=dict)

    def open(self, rule: StopRule) -> bool:
        if not self.available or self.processes >= rule.max_processes:
            return False
        if self.processes < rule.min_processes or not self.samples:
            return True
        return not all_decided(
            estimate([s for s, _, _ in v], rule, regime=regime) for (_, regime), v in self.samples.items()
        )

    def record(self, result: EvalResult) -> None:
        self.processes += 1
        self.failures_in_a_row = 0
        for case in result.cases:
            if case.hidden:
                continue
            self.params[case.name] = dict(case.params)
            for regime, t in case.timings.items():
                if t.speedup > 0 and math.isfinite(t.speedup):
                    entry = (t.speedup, t.reference.median_us, t.candidate.median_us)
                    self.samples.setdefault((case.name, regime), []).append(entry)

    def report(self, rule: StopRule) -> ColumnReport:
        cells = []
        for (case, regime), values in self.samples.items():
            cell = final(estimate([s for s, _, _ in values], rule, regime=regime))
            cells.append(
                CellReport(
                    case=case,
                    params=self.params.get(case, {}),
                    regime=regime,
                    speedups=cell.speedups,
                    pooled=cell.pooled,
                    lower=_finite(cell.lower),
                    upper=_finite(cell.upper),
                    cv=_finite(cell.cv),
                    verdict=cell.verdict,
                    baseline_us=geometric_mean([b for _, b, _ in values]),
                    kernel_us=geometric_mean([k for _, _, k in values]),
                )
            )
        available = self.available and (self.processes > 0)
        return ColumnReport(
            name=self.name,
            baseline=self.baseline,
            label=self.label,
            available=available,
            reason=self.reason,
            processes=self.processes,
            cells=tuple(cells),
        )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _columns(
    current: str | None, label: str = "", reason: str = "", kernel_compiled: bool = False
) -> list[_Column]:
    compiled = "torch.compile of the original code (default mode, dynamic=False)"
    if kernel_compiled:
        compiled += ", against the kernel's function under torch.compile too, as the engine compiles it"
    columns = [
        _Column(EAGER, "eager", "eager PyTorch (the original code)"),
        _Column("compile", COMPILE, compiled),
    ]
    if current:
        columns.append(_Column(CURRENT, call_spec(current), f"the engine's current path `{current}`"))
    else:
        columns.append(
            _Column(
                CURRENT,
                "",
                label or "the engine's current path",
                available=False,
                reason=reason
                or "the engine names no current path for this function (task.toml `current_path`)",
            )
        )
    assert tuple(c.name for c in columns) == COLUMNS
    return columns


def confirm(
    task_dir: Path,
    kernel_source: str,
    options: ConfirmOptions | None = None,
    *,
    kernel_sha: str = "",
    progress: Callable[[str], None] = lambda message: None,
) -> ConfirmReport:
    """Time `kernel_source` against every column in fresh processes until the stop rule decides."""
    from evaluators.backends import require_backend
    from evaluators.pool import WorkerPool

    options = options or ConfirmOptions()
    rule = options.rule
    task = load_task(task_dir)
    base = options.config or EvalConfig()
    current = options.current_path or current_path_of(task_dir)
    columns = _columns(
        current, options.current_path_label, options.current_path_reason, options.kernel_compiled
    )
    started = time.monotonic()
    failures: list[str] = []
    timed = bool(getattr(require_backend(options.backend, options.device_index), "can_time", False))
    # Where it times, the next processes warm up while others are measured (off the timing core);
    # elsewhere no worker is started ahead of need.
    at_once = max(1, options.at_once) if timed and options.hold_gpu else 1
    pool = WorkerPool(
        options.backend,
        size=at_once,
        device_index=options.device_index,
        config=base,
        replace_workers=timed,
    )
    with pool:
        backend = pool.backend
        with held_gpu(backend, options) as held, workers_lock(held) as run_lock:
            configs = {
                c.name: confirmation_config(
                    base,
                    c.baseline,
                    caller_holds_gpu=held,
                    run_lock=run_lock,
                    timed=timed,
                    compile_candidate=options.kernel_compiled and c.baseline == COMPILE,
                )
                for c in columns
            }
            round_ = 0
            while True:
                todo = [c for c in columns if (c.open(rule) if timed else c.available and not c.processes)]
                if not todo:
                    break
                round_ += 1
                batch = [
                    c
                    for c in todo
                    for _ in range(_next_processes(c, rule, at_once, len(todo)) if timed else 1)
                ]
                for column in todo:
                    first, count = column.processes + 1, batch.count(column)
                    numbers = f"{first}-{first + count - 1}" if count > 1 else str(first)
                    progress(f"confirming against {column.name}: fresh process {numbers}")
                results = run_processes(pool, task, kernel_source, [configs[c.name] for c in batch])
                for column, result in zip(batch, results, strict=True):
                    _take(column, result, round_, failures)
        hardware = pool.hardware
    regimes = tuple(
        sorted({r for c in columns for (_, r) in c.samples}, key=lambda r: r != task.regime)
    ) or tuple(base.timing.regimes)
    reason = ""
    if not timed:
        reason = (
            NOT_MEASURED_INTERPRETER
            if backend.name == "triton-interpret"
            else f"not measured on this machine (the {backend.name} backend does not time)"
        )
    return ConfirmReport(
        measured=timed and any(c.samples for c in columns),
        reason=reason or ("" if any(c.samples for c in columns) else "no confirmation process timed a case"),
        backend=backend.name,
        device=str(getattr(hardware, "device", "") or ""),
        kernel_sha=kernel_sha,
        regimes=regimes,
        rule={
            "min_processes": rule.min_processes,
            "max_processes": rule.max_processes,
            "confidence": rule.confidence,
            "bound": "one-sided t prediction bound on per-process log-speedups",
            "spread_floor": {"graph": rule.graph_spread_floor, "wall": rule.wall_spread_floor},
        },
        columns=tuple(c.report(rule) for c in columns),
        wall_s=round(time.monotonic() - started, 3),
        failures=tuple(failures),
        extra={"kernel_compiled": True} if options.kernel_compiled else {},
    )


def _take(column: _Column, result: EvalResult, round_: int, failures: list[str]) -> None:
    if result.passed:
        column.record(result)
        return
    if result.reason.startswith(UNAVAILABLE):
        column.available = False
        column.reason = result.reason[len(UNAVAILABLE) :].lstrip(": ") or result.reason
        return
    failures.append(f"{column.name}, process {round_}: {result.stage.value} stage: {result.reason}")
    column.failures_in_a_row += 1
    if column.failures_in_a_row >= FAILURES_PER_COLUMN:
        column.available = False
        column.reason = f"{FAILURES_PER_COLUMN} confirmation processes in a row failed: {result.reason}"


def _next_processes(column: _Column, rule: StopRule, at_once: int, open_columns: int) -> int:
    """How many processes a still-open column gets in the next round: what the rule asks at least, and
    enough to keep `at_once` processes busy (the last round may measure a few more than the rule needed:
    more processes only tighten a bound), never past the rule's cap."""
    wanted = max(rule.min_processes - column.processes, -(-at_once // open_columns), 1)
    return max(1, min(wanted, rule.max_processes - column.processes))


def run_processes(
    pool: Any, task: Any, kernel_source: str, configs: Sequence[EvalConfig]
) -> list[EvalResult]:
    """One fresh process per config, as many at once as the pool has workers; the results in order."""
    if pool.size <= 1 or len(configs) <= 1:
        return [pool.evaluate(task, kernel_source, config=c) for c in configs]
    with ThreadPoolExecutor(max_workers=pool.size, thread_name_prefix="kb-confirm") as threads:
        return list(threads.map(lambda c: pool.evaluate(task, kernel_source, config=c), configs))


@contextlib.contextmanager
def workers_lock(held: bool) -> Iterator[str]:
    """While the device's lock is held: the name of a lock of this confirmation's own for its workers
    (TimingConfig.run_lock), its file removed afterwards; "" where nothing is held."""
    if not held:
        yield ""
        return
    from evaluators.gpu_lock import lock_dir

    name = f"confirm-{os.getpid()}-{secrets.token_hex(6)}"
    try:
        yield name
    finally:
        with contextlib.suppress(OSError):
            (lock_dir() / f"{name}.lock").unlink()


@contextlib.contextmanager
def held_gpu(backend: Any, options: ConfirmOptions) -> Iterator[bool]:
    """The device's GPU lock for the whole confirmation (yields True while held), where the backend times
    on a CUDA device; otherwise nothing is held (False) and the workers lock as usual."""
    device = str(getattr(backend, "device", ""))
    if not (options.hold_gpu and getattr(backend, "can_time", False) and device.startswith("cuda")):
        yield False
        return
    from evaluators.gpu_lock import GpuLock, device_key

    lock = GpuLock(device_key(options.device_index))
    with lock.hold():
        yield True
