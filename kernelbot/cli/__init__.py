"""Command-line entry: one module per command verb, each holding its Typer command (the arguments, parsed)
and `run(...) -> int` (what the command does with them, typed; the exit code). Nothing outside this package
imports it: the work itself lives in the packages the commands call (evolution.search, kernelbot.target,
kernelbot.scan, extractors, evaluators).

application.py     the Typer app, --version, and the error boundary (exit codes, crash reports)
search_options.py  the search flags that evolve, target and scan share (one spelling, one help text)
eval.py evolve.py best.py export.py extract.py capture.py scan.py init_workflow.py target.py report.py
"""

from __future__ import annotations

import sys
from typing import Optional

from evaluators import secrets
from kernelbot import exit_codes
from kernelbot.cli.application import app

# Importing a command module registers its commands, and `kernelbot --help` lists them in registration
# order: keep this order rather than the alphabetical one.
# isort: off
from kernelbot.cli import eval, evolve, best, export  # noqa: F401
from kernelbot.cli import extract, capture  # noqa: F401
from kernelbot.cli import scan, init_workflow, target, report  # noqa: F401
# isort: on

__all__ = ["app", "main"]


def main(argv: Optional[list[str]] = None) -> int:  # noqa: UP045 - typer needs Optional on 3.10
    """Run the CLI and return its exit code (the console script exits with it)."""
    args = sys.argv[1:] if argv is None else argv
    # The token and keys leave the environment before any command can start a process that runs code
    # kernelbot did not write; the forge and the LLM client take them from the registry.
    with secrets.held(args):
        try:
            app(args=args, prog_name="kernelbot")
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return exit_codes.OK
