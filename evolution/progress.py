"""Progress of a search as it runs: best score, evaluations per minute, outcomes by stage, tokens.

The controller hands a Snapshot to a ProgressSink after every evaluation. `RichProgress` redraws a live panel
on a terminal; `LineProgress` prints one plain line at most every few seconds (logs, CI); `NullProgress`
stays silent (tests, --json).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text


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

    @property
    def evaluations_per_minute(self) -> float:
        return 60.0 * self.evaluations_this_session / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def failures(self) -> dict[str, int]:
        return {k: v for k, v in sorted(self.outcomes.items()) if k != "passed"}

    def line(self) -> str:
        failures = ", ".join(f"{k} {v}" for k, v in self.failures().items()) or "none"
        best = f"{self.best_score:.3f} ({self.best_id})" if self.best_id else "-"
        return (
            f"[{self.task}] iter {self.iterations}/{self.iteration_limit}  evals {self.evaluations}"
            f" ({self.evaluations_per_minute:.1f}/min)  best {best}  failures: {failures}"
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
    """One line per update, throttled to one every `interval_s` seconds (notes always print)."""

    def __init__(self, console: Console, interval_s: float = 10.0) -> None:
        self.console = console
        self.interval_s = interval_s
        self._last = 0.0

    def started(self, snapshot: Snapshot) -> None:
        self.console.print(f"evolving {snapshot.task}: {snapshot.event}", markup=False)

    def update(self, snapshot: Snapshot) -> None:
        now = time.monotonic()
        if now - self._last >= self.interval_s:
            self._last = now
            self.console.print(snapshot.line(), markup=False)

    def note(self, message: str) -> None:
        self.console.print(f"  {message}", markup=False)

    def finished(self, snapshot: Snapshot) -> None:
        self.console.print(snapshot.line(), markup=False)


class RichProgress:
    """A live panel: headline numbers, failures by stage, islands, and the last few events."""

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
        s = self._snapshot
        if s is None:
            return Group(Text("starting..."))
        head = Table.grid(padding=(0, 2))
        head.add_row(
            Text(f"task {s.task}", style="bold"),
            f"iterations {s.iterations}/{s.iteration_limit}",
            f"evaluations {s.evaluations} ({s.evaluations_per_minute:.1f}/min)",
            f"best {s.best_score:.3f}" + (f" [{s.best_id}]" if s.best_id else ""),
            f"tokens {s.tokens}" if s.tokens else "",
            f"{s.elapsed_s:.0f}s",
        )
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
        events = Text("\n".join(self._events), style="dim")
        return Group(head, outcomes, islands, events)


def make_progress(console: Console, *, quiet: bool = False) -> ProgressSink:
    if quiet:
        return NullProgress()
    if console.is_terminal:
        return RichProgress(console)
    return LineProgress(console)
