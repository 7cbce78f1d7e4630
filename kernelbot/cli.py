"""Command-line entry: parses arguments and dispatches to `kernelbot.commands.<verb>.run`. Nothing else.

Every command returns an exit code (kernelbot.exit_codes). A KernelbotError becomes one line on stderr and
exit 1; any other exception is our bug: its traceback goes to a crash file whose path is printed (exit 3).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional, TypeVar

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
) -> None:
    """Evolve fused Triton kernels for hot PyTorch code and prove they are faster."""
    if version:
        from kernelbot import __version__

        typer.echo(f"kernelbot {__version__}")
        raise typer.Exit(exit_codes.OK)


BACKEND_HELP = "auto | triton-cuda | triton-interpret (CPU, correctness only) | maca"


@command("eval")
def eval_command(
    task: Annotated[Path, typer.Argument(help="Task directory (task.toml, reference.py, inputs.py).")],
    candidate: Annotated[Path, typer.Argument(help="Candidate .py file defining the task's entry.")],
    backend: Annotated[str, typer.Option(help=BACKEND_HELP)] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the full EvalResult as JSON.")] = False,
    seeds: Annotated[int, typer.Option(help="Hidden random seeds per case.")] = 3,
    device: Annotated[int, typer.Option(help="GPU index for triton-cuda / maca.")] = 0,
    no_static: Annotated[bool, typer.Option("--no-static", help="Skip the static checks.")] = False,
) -> int:
    """Judge CANDIDATE against TASK: static checks, compile, correctness, hack checks, timing.

    Exit codes: 0 passed, 4 rejected (a stage failed), 5 flagged by a hack check, 1 bad input.
    """
    from kernelbot.commands import eval as eval_cmd

    return eval_cmd.run(
        task, candidate, backend=backend, as_json=as_json, seeds=seeds, device=device, static=not no_static
    )


def main(argv: Optional[list[str]] = None) -> int:  # noqa: UP045 - typer needs Optional on 3.10
    """Run the CLI and return its exit code (the console script exits with it)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        app(args=args, prog_name="kernelbot")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
