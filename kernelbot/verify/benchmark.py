"""The end-to-end benchmark before and after the change: the same command in the base work tree and in the
changed one, alternating (base, change, base, change, ...) so that drift of the machine falls on both sides,
each run a fresh process whose metric is read from its output. Pairs of runs are added until the 95 % CI
half-width of the change is within a target (2 %) or a cap is reached (runs a side, or the profile's time
budget for the whole comparison): then the outcome is "inconclusive", with the runs it took (a +6.67 %
change with a CI of -26 % .. +40 % from five runs a side says nothing).

A number is only ever read from a run that happened here and exited 0. When the benchmark cannot mean
anything on this machine (no GPU for a kernel that only runs on one), is not configured, or fails, the outcome
says why and carries no samples: a partial or borrowed number is never reported.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelbot.verify.process import resolve_command, run_captured, tail, worktree_env
from kernelbot.verify.stats import RelativeDelta, relative_delta, summarize

DEFAULT_TIMEOUT_S = 1800.0
TARGET_HALF_WIDTH_PCT = 2.0  # stop once the change's 95 % CI is within +-this many percentage points
DEFAULT_MAX_RUNS = 20  # per side: the cap of the adaptive rule
# Seconds the whole comparison may take before no further pair is started (the first `runs` a side always
# run). A profile sets its own (kernelbot.engines.BenchmarkSpec.time_budget_s).
DEFAULT_TIME_BUDGET_S = 1800.0


@dataclass(frozen=True)
class BenchmarkCommand:
    """How to run the benchmark in a work tree and read its metric (from a JSON key or a regex)."""

    argv: tuple[str, ...]
    metric: str  # the metric's name as shown (the JSON key when read from JSON)
    cwd: str = ""  # relative to the work tree's root
    env: dict[str, str] = field(default_factory=dict)
    json_key: str | None = None  # dotted key into the last JSON object printed
    regex: str | None = None  # group "value" (or group 1) of the last match
    unit: str = ""
    higher_is_better: bool = True
    timeout_s: float = DEFAULT_TIMEOUT_S


class MetricNotFound(ValueError):
    pass


def read_metric(output: str, command: BenchmarkCommand) -> float:
    """The metric from a run's output (the last occurrence wins: benchmarks print warm-up results first)."""
    if command.json_key:
        for line in reversed(output.splitlines()):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                value: object = json.loads(line)
            except json.JSONDecodeError:
                continue
            for part in command.json_key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        raise MetricNotFound(f"no JSON line with a numeric {command.json_key!r} in the output")
    if command.regex:
        matches = list(re.finditer(command.regex, output, re.MULTILINE))
        if not matches:
            raise MetricNotFound(f"the pattern {command.regex!r} does not match the output")
        last = matches[-1]
        text = last.group("value") if "value" in last.re.groupindex else last.group(1)
        try:
            return float(text)
        except ValueError as exc:
            raise MetricNotFound(f"{text!r} (matched by {command.regex!r}) is not a number") from exc
    raise MetricNotFound("the benchmark names neither a JSON key nor a regex for its metric")


@dataclass(frozen=True)
class E2EOutcome:
    """Both sides' samples (empty unless measured) and, when measured, their summary and relative change."""

    measured: bool
    reason: str
    command: tuple[str, ...] = ()
    cwd: str = ""
    metric: str = ""
    unit: str = ""
    higher_is_better: bool = True
    runs: int = 0
    before: tuple[float, ...] = ()
    after: tuple[float, ...] = ()
    order: tuple[str, ...] = ()  # "base" / "change", in the order the runs happened
    logs: tuple[str, ...] = ()
    # The adaptive rule (None: a fixed number of runs): the half-width aimed at, and whether it was reached
    # (False: a cap came first, the outcome is inconclusive); `limit` says which cap ended it: "runs" or
    # "time" (the time budget, `time_budget_s`).
    target_half_width_pct: float | None = None
    conclusive: bool | None = None
    limit: str = ""
    time_budget_s: float | None = None

    def delta(self) -> RelativeDelta | None:
        """The change's relative delta of the means and its interval (None unless measured)."""
        return relative_delta(self.before, self.after) if self.measured else None

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "measured": self.measured,
            "reason": self.reason,
            "command": list(self.command),
            "cwd": self.cwd,
            "metric": self.metric,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "runs": self.runs,
            "order": list(self.order),
            "before": list(self.before),
            "after": list(self.after),
            "logs": list(self.logs),
            "target_half_width_pct": self.target_half_width_pct,
            "conclusive": self.conclusive,
            "limit": self.limit,
            "time_budget_s": self.time_budget_s,
            "half_width_pct": None,
            "means": None,
            "stdev": None,
            "cv": None,
            "delta_pct": None,
            "ci_pct": None,
            "confidence": None,
            "method": None,
        }
        delta = self.delta()
        if delta is not None:
            b, a = summarize(self.before), summarize(self.after)
            data.update(
                means={"before": b.mean, "after": a.mean},
                stdev={"before": b.stdev, "after": a.stdev},
                cv={"before": b.cv, "after": a.cv},
                delta_pct=delta.pct,
                ci_pct=list(delta.ci_pct) if delta.ci_pct else None,
                half_width_pct=half_width_pct(delta.ci_pct),
                confidence=delta.confidence,
                method=delta.method,
            )
        return data

    @classmethod
    def from_dict(cls, data: dict) -> E2EOutcome:
        return cls(
            measured=bool(data["measured"]),
            reason=data["reason"],
            command=tuple(data.get("command", ())),
            cwd=data.get("cwd", ""),
            metric=data.get("metric", ""),
            unit=data.get("unit", ""),
            higher_is_better=bool(data.get("higher_is_better", True)),
            runs=int(data.get("runs", 0)),
            before=tuple(float(v) for v in data.get("before", ())),
            after=tuple(float(v) for v in data.get("after", ())),
            order=tuple(data.get("order", ())),
            logs=tuple(data.get("logs", ())),
            target_half_width_pct=data.get("target_half_width_pct"),
            conclusive=data.get("conclusive"),
            limit=str(data.get("limit") or ""),
            time_budget_s=data.get("time_budget_s"),
        )


def half_width_pct(ci_pct: tuple[float, float] | list[float] | None) -> float | None:
    """Half the width of the change's confidence interval, in percentage points."""
    return None if not ci_pct else (float(ci_pct[1]) - float(ci_pct[0])) / 2.0


def not_measured(reason: str, command: BenchmarkCommand | None = None, runs: int = 0) -> E2EOutcome:
    if command is None:
        return E2EOutcome(False, reason, runs=runs)
    return E2EOutcome(
        False,
        reason,
        command=command.argv,
        cwd=command.cwd,
        metric=command.metric,
        unit=command.unit,
        higher_is_better=command.higher_is_better,
        runs=runs,
    )


def run_alternating(
    command: BenchmarkCommand,
    base: Path,
    change: Path,
    runs: int,
    *,
    log_dir: Path,
    source_root: str = "",
    progress: Callable[[str], None] = lambda message: None,
    max_runs: int | None = None,
    target_half_width_pct: float = TARGET_HALF_WIDTH_PCT,
    time_budget_s: float = DEFAULT_TIME_BUDGET_S,
    hold: Callable[[], contextlib.AbstractContextManager[object]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> E2EOutcome:
    """Run the benchmark on each side, alternating, and collect the metric of every run: `runs` times a side
    when `max_runs` is None; else at least `runs` and then pairs until the change's CI half-width is within
    `target_half_width_pct`, or `max_runs` a side were run, or `time_budget_s` has passed since the first run
    (then inconclusive). `hold` (the GPU lock) is held around the whole benchmark, so no other kernelbot run
    times on the GPU meanwhile."""
    if runs < 2:
        return not_measured(f"{runs} run(s) per side asked for; a spread needs two", command, runs)
    with hold() if hold is not None else contextlib.nullcontext():
        rule = _Rule(runs, max_runs, target_half_width_pct, time_budget_s, clock)
        return _alternate(command, base, change, rule, log_dir, source_root, progress)


@dataclass(frozen=True)
class _Rule:
    """When the alternation stops (see run_alternating)."""

    runs: int
    max_runs: int | None
    target: float
    time_budget_s: float
    clock: Callable[[], float]


def _alternate(
    command: BenchmarkCommand,
    base: Path,
    change: Path,
    rule: _Rule,
    log_dir: Path,
    source_root: str,
    progress: Callable[[str], None],
) -> E2EOutcome:
    runs, target = rule.runs, rule.target
    adaptive = rule.max_runs is not None
    cap = max(runs, rule.max_runs) if rule.max_runs is not None else runs
    started = rule.clock()
    out_of_time = False
    log_dir.mkdir(parents=True, exist_ok=True)
    samples: dict[str, list[float]] = {"base": [], "change": []}
    order: list[str] = []
    logs: list[str] = []
    argv = resolve_command(command.argv)
    conclusive: bool | None = None
    for i in range(cap):
        if adaptive and i >= runs and _within(samples, target):
            conclusive = True
            break
        if adaptive and i >= runs and rule.clock() - started >= rule.time_budget_s:
            out_of_time = True
            break
        for side, tree in (("base", base), ("change", change)):
            progress(f"benchmark run {i + 1}/{cap if adaptive else runs} on the {side}")
            exit_code, output = run_captured(
                argv,
                tree / command.cwd,
                worktree_env(tree, source_root, command.env),
                command.timeout_s,
            )
            log = log_dir / f"benchmark-{side}-{i + 1}.log"
            log.write_text(output)
            logs.append(str(log))
            where = f"on the {side} (run {i + 1} of {runs})"
            if exit_code is None:
                reason = f"the benchmark ran past its {command.timeout_s:.0f}s limit {where}"
                return not_measured(reason, command, runs)
            if exit_code != 0:
                reason = f"the benchmark failed {where}, exit {exit_code}: {tail(output, 300)}"
                return not_measured(reason, command, runs)
            try:
                value = read_metric(output, command)
            except MetricNotFound as exc:
                return not_measured(f"{exc} {where} (log: {log})", command, runs)
            samples[side].append(value)
            order.append(side)
    if summarize(samples["base"]).mean == 0.0:
        return not_measured(f"{command.metric} is 0 on the base, no relative change", command, runs)
    done = len(samples["base"])
    if adaptive and conclusive is None:
        conclusive = _within(samples, target)
    limit = "" if not adaptive or conclusive else ("time" if out_of_time else "runs")
    if not adaptive:
        reason = f"{done} runs per side, alternating base and change"
    elif conclusive:
        reason = (
            f"{done} runs per side, alternating base and change, until the 95 % CI was within +-{target:g} %"
        )
    else:
        why = "the cap" if limit == "runs" else f"the time budget of {rule.time_budget_s:g} s"
        reason = (
            f"inconclusive: the 95 % CI of the change was still wider than +-{target:g} % after {done} runs "
            f"per side ({why}), alternating base and change"
        )
    return E2EOutcome(
        True,
        reason,
        command=command.argv,
        cwd=command.cwd,
        metric=command.metric,
        unit=command.unit,
        higher_is_better=command.higher_is_better,
        runs=done,
        before=tuple(samples["base"]),
        after=tuple(samples["change"]),
        order=tuple(order),
        logs=tuple(logs),
        target_half_width_pct=target if adaptive else None,
        conclusive=conclusive,
        limit=limit,
        time_budget_s=rule.time_budget_s if adaptive else None,
    )


def _within(samples: dict[str, list[float]], target: float) -> bool:
    """True when the change's CI half-width so far is within `target` percentage points."""
    if len(samples["base"]) < 2 or summarize(samples["base"]).mean == 0.0:
        return False
    half = half_width_pct(relative_delta(samples["base"], samples["change"]).ci_pct)
    return half is not None and half <= target
