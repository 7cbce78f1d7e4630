"""The commands that make a Task from a repository's function: `extract` from its source and an input spec,
`capture` from the calls a real command makes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelbot.cli.application import command


@command("extract")
def extract_command(
    repo: Annotated[Path, typer.Option(help="Repository (a git checkout or an unpacked release).")],
    function: Annotated[
        str, typer.Option(help="package.module:Qualname, path/to/file.py:Qualname, or a unique Qualname.")
    ],
    out: Annotated[
        Optional[Path], typer.Option(help="Task directory to write (default tasks/<name>).")  # noqa: UP045
    ] = None,
    spec: Annotated[Optional[Path], typer.Option(help="TOML input spec with symbolic sizes.")] = None,  # noqa: UP045
    regime: Annotated[str, typer.Option(help="graph (CUDA graph) | wall (eager).")] = "graph",
    name: Annotated[Optional[str], typer.Option(help="Task name (default: the entry name).")] = None,  # noqa: UP045
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing task at --out.")] = False,
    no_probe: Annotated[bool, typer.Option("--no-probe", help="Skip the test run.")] = False,
) -> int:
    """Extract FUNCTION from REPO into a self-contained Task (reference.py, inputs.py, task.toml)."""
    from kernelbot.commands import extract as extract_cmd

    return extract_cmd.run(
        repo, function, out=out, spec=spec, regime=regime, name=name, force=force, probe=not no_probe
    )


@command("capture")
def capture_command(
    repo: Annotated[Path, typer.Option(help="Repository holding the function.")],
    function: Annotated[str, typer.Option(help="package.module:Qualname or path/to/file.py:Qualname.")],
    cmd: Annotated[Optional[list[str]], typer.Argument(help="Command to run, after `--`.")] = None,  # noqa: UP045
    max_calls: Annotated[int, typer.Option(help="Distinct call signatures to record.")] = 8,
    out: Annotated[Optional[Path], typer.Option(help="Task directory to write.")] = None,  # noqa: UP045
    regime: Annotated[str, typer.Option(help="graph | wall.")] = "graph",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing task at --out.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds the command may run.")] = 1800.0,
) -> int:
    """Run CMD with FUNCTION wrapped, record its first distinct calls, and write a Task that replays them."""
    from kernelbot.commands import capture as capture_cmd

    return capture_cmd.run(
        repo,
        function,
        list(cmd or []),
        max_calls=max_calls,
        out=out,
        regime=regime,
        force=force,
        timeout=timeout,
    )
