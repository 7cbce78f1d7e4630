"""The live view of a target run: one line per stage as it finishes, and what it is doing meanwhile.

On a terminal a rich spinner shows the running stage's latest step, and finished stages print a ticked line;
elsewhere (a log, CI, a pipe) every start, step and end is a plain line. The evolve stage draws its own live
panel (evolution.progress), so no spinner runs while it does.
"""

from __future__ import annotations

from typing import Protocol

from rich.console import Console
from rich.markup import escape
from rich.status import Status

OWN_DISPLAY = frozenset({"evolve"})


class StageView(Protocol):
    def started(self, stage: str, detail: str = "") -> None: ...

    def step(self, message: str) -> None: ...

    def finished(self, stage: str, summary: str, seconds: float) -> None: ...

    def skipped(self, stage: str, summary: str) -> None: ...

    def failed(self, stage: str, error: str, seconds: float) -> None: ...

    def close(self) -> None: ...


class PlainView:
    """One plain line per event, prefixed by the stage (no colour, no cursor movement)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._stage = ""

    def _line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    def started(self, stage: str, detail: str = "") -> None:
        self._stage = stage
        self._line(f"[{stage}] started" + (f": {detail}" if detail else ""))

    def step(self, message: str) -> None:
        self._line(f"[{self._stage or 'target'}] {message}")

    def finished(self, stage: str, summary: str, seconds: float) -> None:
        self._line(f"[{stage}] done in {seconds:.1f}s" + (f": {summary}" if summary else ""))

    def skipped(self, stage: str, summary: str) -> None:
        self._line(f"[{stage}] already done" + (f": {summary}" if summary else ""))

    def failed(self, stage: str, error: str, seconds: float) -> None:
        self._line(f"[{stage}] stopped after {seconds:.1f}s")

    def close(self) -> None:
        pass


class RichView:
    """A spinner with the running stage's latest step; a ticked line per finished stage."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._status: Status | None = None
        self._stage = ""

    def started(self, stage: str, detail: str = "") -> None:
        self._stage = stage
        self.console.print(f"[bold cyan]{stage}[/] " + escape(detail))
        if stage not in OWN_DISPLAY:
            self._status = self.console.status(escape(f"{stage}: {detail or 'working'}"))
            self._status.start()

    def step(self, message: str) -> None:
        if self._status is not None:
            self._status.update(escape(f"{self._stage}: {message}"))
        else:
            self.console.print(f"  {escape(message)}", highlight=False)

    def finished(self, stage: str, summary: str, seconds: float) -> None:
        self._stop()
        self.console.print(f"[green]✓[/] [bold]{stage}[/] [dim]{seconds:.1f}s[/] {escape(summary)}")

    def skipped(self, stage: str, summary: str) -> None:
        self.console.print(f"[green]✓[/] [bold]{stage}[/] [dim](already done)[/] {escape(summary)}")

    def failed(self, stage: str, error: str, seconds: float) -> None:
        self._stop()
        self.console.print(f"[red]✗[/] [bold]{stage}[/] [dim]{seconds:.1f}s[/]")

    def close(self) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def make_view(console: Console) -> StageView:
    return RichView(console) if console.is_terminal else PlainView(console)
