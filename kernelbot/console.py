"""The one place kernelbot writes to the terminal (tests patch `console` / `err_console`)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from evaluators import secrets

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    # The message is text, not markup: `tensor [tokens, hidden]` in it must be printed as written. It may
    # quote anything (a file, a server's answer): every secret value is masked.
    err_console.print(f"[bold red]error:[/] {escape(secrets.redact(message))}", markup=True, highlight=False)


def warn(message: str) -> None:
    err_console.print(f"[yellow]warning:[/] {secrets.redact(message)}")
