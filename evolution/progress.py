"""Progress of a search as it runs: its stage, best score and the best candidate's number per case,
evaluations per minute, failures by stage, tokens.

The controller hands a Snapshot to a ProgressSink after every evaluation. `RichProgress` redraws a live panel
on a terminal; `LineProgress` prints one plain line at most every few seconds (logs, CI); `NullProgress`
stays silent (tests, --json). `make_progress` picks one by whether the console is a terminal.

`panel(snapshot, events)` is the panel itself, for another live view to embed (e.g. a target run's).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from evaluators.result import EvalResult


@dataclass(frozen=True)
class CaseBest:
    """One case of the best candidate so far: its speedup in the task's regime (None when not timed)."""

    name: str
    passed: bool
    speedup: float | None = None
    ci: tuple[float, float] | None = None
    skipped: str = ""

    def short(self) -> str:
        if self.skipped:
            return f"{self.name} skipped"
        if not self.passed:
            return f"{self.name} FAILED"
        return f"{self.name} {self.speedup:.2f}x" if self.speedup is not None else f"{self.name} ok"


def case_bests(result: EvalResult | None) -> tuple[CaseBest, ...]:
    """Per task case (the evaluator's hidden ones left out) the result's speedup in its own regime."""
    if result is None:
        return ()
    out = []
    for case in result.cases:
        if case.hidden:
            continue
        timing = case.timings.get(result.regime)
        out.append(
            CaseBest(
                case.name,
                case.passed,
                timing.speedup if timing else None,
                (timing.ci_low, timing.ci_high) if timing else None,
                case.skipped,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Snapshot:
    task: str
    iterations: int
    iteration_limit: int
    evaluations: int
    best_id: str | None
    best_score: float
    outcomes: dict[str, int]  # "passed" or the stage a failure stopped at, "flagged" for hack findings
    tokens: int
    elapsed_s: float
    evaluations_this_session: int
    islands: list[dict[str, Any]] = field(default_factory=list)
    event: str = ""
    cases: tuple[CaseBest, ...] = ()  # the best correct candidate's, per case

    @property
    def stage(self) -> str:
        """seeding, resuming, evolving or stopped (from the controller's event and the iteration count)."""
        if self.event.startswith("stopped"):
            return "stopped"
        if self.event in ("seeding", "resuming"):
            return self.event
        return "seeding" if self.iterations == 0 else "evolving"

    @property
    def evaluations_per_minute(self) -> float:
        return 60.0 * self.evaluations_this_session / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def failures(self) -> dict[str, int]:
        return {k: v for k, v in sorted(self.outcomes.items()) if k != "passed"}

    def line(self) -> str:
        failures = ", ".join(f"{k} {v}" for k, v in self.failures().items()) or "none"
        best = f"{self.best_score:.3f} ({self.best_id})" if self.best_id else "-"
        cases = ", ".join(c.short() for c in self.cases)
        return (
            f"[{self.task}] {self.stage}  iter {self.iterations}/{self.iteration_limit}"
            f"  evals {self.evaluations} ({self.evaluations_per_minute:.1f}/min)  best {best}"
            + (f"  per case: {cases}" if cases else "")
            + f"  failures: {failures}"
            + (f"  tokens {self.tokens}" if self.tokens else "")
        )


class ProgressSink(Protocol):
    def started(self, snapshot: Snapshot) -> None: ...

    def update(self, snapshot: Snapshot) -> None: ...

    def note(self, message: str) -> None: ...

    def finished(self, snapshot: Snapshot) -> None: ...


class NullProgress:
    def started(self, snapshot: Snapshot) -> None:
        pass

    def update(self, snapshot: Snapshot) -> None:
        pass

    def note(self, message: str) -> None:
        pass

    def finished(self, snapshot: Snapshot) -> None:
        pass


class LineProgress:
    """One line per update, throttled to one every `interval_s` seconds, and at once when the stage changes
    (notes always print). No colour, no cursor movement: what a log or CI shows stays readable."""

    def __init__(self, console: Console, interval_s: float = 10.0) -> None:
        self.console = console
        self.interval_s = interval_s
        self._last = 0.0
        self._stage = ""

    def started(self, snapshot: Snapshot) -> None:
        self._stage = snapshot.stage
        self.console.print(f"evolving {snapshot.task}: {snapshot.event}", markup=False, highlight=False)

    def update(self, snapshot: Snapshot) -> None:
        now = time.monotonic()
        if now - self._last >= self.interval_s or snapshot.stage != self._stage:
            self._last, self._stage = now, snapshot.stage
            self.console.print(snapshot.line(), markup=False, highlight=False)

    def note(self, message: str) -> None:
        self.console.print(f"  {message}", markup=False, highlight=False)

    def finished(self, snapshot: Snapshot) -> None:
        self.console.print(snapshot.line(), markup=False, highlight=False)


class RichProgress:
    """A live panel (see `panel`), redrawn after every evaluation and note."""

    def __init__(self, console: Console, events: int = 6) -> None:
        self.console = console
        self._events: list[str] = []
        self._keep = events
        self._live: Live | None = None
        self._snapshot: Snapshot | None = None

    def started(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)
        self._live.start()

    def update(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        if snapshot.event:
            self._push(snapshot.event)
        self._refresh()

    def note(self, message: str) -> None:
        self._push(message)
        self._refresh()

    def finished(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._push(snapshot.event)
        self._refresh()
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _push(self, message: str) -> None:
        self._events = [*self._events, message][-self._keep :]

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._render())

    def _render(self) -> Group:
        if self._snapshot is None:
            return Group(Text("starting..."))
        return panel(self._snapshot, self._events)


def panel(s: Snapshot, events: Sequence[str] = ()) -> Group:
    """The live panel: headline (stage, iterations, rate, best), the best candidate per case, failures by
    stage, islands, and the last few events."""
    head = Table.grid(padding=(0, 2))
    head.add_row(
        Text(f"task {s.task}", style="bold"),
        Text(s.stage, style="bold cyan"),
        f"iterations {s.iterations}/{s.iteration_limit}",
        f"evaluations {s.evaluations} ({s.evaluations_per_minute:.1f}/min)",
        f"best {s.best_score:.3f}" + (f" [{s.best_id}]" if s.best_id else ""),
        f"tokens {s.tokens}" if s.tokens else "",
        f"{s.elapsed_s:.0f}s",
    )
    parts: list[Any] = [head]
    if s.cases:
        cases = Table(title="best per case", show_edge=False, pad_edge=False)
        for col in ("case", "speedup", "95% CI", "result"):
            cases.add_column(col, justify="left" if col == "case" else "right")
        for c in s.cases:
            cases.add_row(
                c.name,
                f"{c.speedup:.3f}x" if c.speedup is not None else "-",
                f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]" if c.ci else "-",
                "skipped" if c.skipped else ("ok" if c.passed else "FAILED"),
            )
        parts.append(cases)
    outcomes = Table(title="outcomes", show_edge=False, pad_edge=False)
    for key in ("passed", *s.failures()):
        outcomes.add_column(key, justify="right")
    outcomes.add_row(*(str(s.outcomes.get(k, 0)) for k in ("passed", *s.failures())))
    islands = Table(title="islands", show_edge=False, pad_edge=False)
    for col in ("island", "elites", "generation", "coverage", "best score"):
        islands.add_column(col, justify="right")
    for isl in s.islands:
        islands.add_row(
            str(isl["island"]),
            str(isl["elites"]),
            str(isl["generation"]),
            f"{float(isl['coverage']):.0%}",
            f"{float(isl['best_score']):.3f}",
        )
    parts += [outcomes, islands, Text("\n".join(events), style="dim")]
    return Group(*parts)


def make_progress(console: Console, *, quiet: bool = False) -> ProgressSink:
    if quiet:
        return NullProgress()
    if console.is_terminal:
        return RichProgress(console)
    return LineProgress(console)
