"""The one place kernelbot writes to the terminal (tests patch `console` / `err_console`)."""

from __future__ import annotations

from rich.console import Console

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)


def warn(message: str) -> None:
    err_console.print(f"[yellow]warning:[/] {message}")
