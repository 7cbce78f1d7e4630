"""The Typer app, its root options, and the one error boundary every command runs behind.

A command returns an exit code (kernelbot.exit_codes). A KernelbotError becomes one line on stderr and exit
1; any other exception is our bug: its traceback goes to a crash file whose path is printed (exit 3).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Annotated, TypeVar

import typer

from kernelbot import exit_codes
from kernelbot.console import error
from kernelbot.crash import report_crash
from kernelbot.errors import KernelbotError

app = typer.Typer(
    name="kernelbot",
    help="Evolve fused Triton kernels for hot PyTorch code and prove they are faster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., int])


def command(name: str) -> Callable[[F], F]:
    """Register a command whose return value is its exit code, behind the one error boundary."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(*args: object, **kwargs: object) -> None:
            try:
                code = fn(*args, **kwargs)
            except (typer.Exit, typer.Abort):
                raise
            except KeyboardInterrupt:
                error("interrupted")
                raise typer.Exit(exit_codes.INTERRUPTED) from None
            except KernelbotError as exc:
                error(str(exc))
                raise typer.Exit(exit_codes.USER_ERROR) from None
            except Exception:
                path = report_crash(sys.argv)
                error(f"an unexpected error occurred (a kernelbot bug); details written to {path}")
                raise typer.Exit(exit_codes.CRASH) from None
            raise typer.Exit(code or exit_codes.OK)

        app.command(name)(guarded)
        return fn

    return decorate


@app.callback(invoke_without_command=True)
def root(
    version: Annotated[bool, typer.Option("--version", help="Print kernelbot's version and exit.")] = False,
    allow_unsandboxed: Annotated[
        bool,
        typer.Option(
            "--allow-unsandboxed",
            help="Judge candidates and run the repository's tests even where no OS sandbox can be made while "
            "a secret (token, key) is set; the run records it. See docs/security.md.",
        ),
    ] = False,
) -> None:
    """Evolve fused Triton kernels for hot PyTorch code and prove they are faster."""
    if allow_unsandboxed:
        import os

        from evaluators.sandbox import ALLOW_ENV

        os.environ[ALLOW_ENV] = "1"  # read where a box is needed (evaluators.sandbox)
    if version:
        from kernelbot import __version__

        typer.echo(f"kernelbot {__version__}")
        raise typer.Exit(exit_codes.OK)


# Shared by every command that evaluates candidates, so the choices read the same in each --help.
BACKEND_HELP = "auto | triton-cuda | triton-interpret (CPU, correctness only) | maca"
