"""The flags that `evolve`, `target` and `scan` share (the search's, and the confirmation's that `target` and
`scan` run), as option types, so the commands take them with one spelling and one help text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from kernelbot.cli.application import BACKEND_HELP

if TYPE_CHECKING:
    from kernelbot.confirm.stoprule import StopRule

LlmEndpoints = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--llm",
        help="MODEL@URL of an OpenAI-compatible endpoint (MODEL@URL#WEIGHT to weight it); repeatable.",
    ),
]
Backend = Annotated[Optional[str], typer.Option(help=BACKEND_HELP)]  # noqa: UP045
WorkersPerDevice = Annotated[
    Optional[int], typer.Option(help="Warm evaluation workers per GPU.")  # noqa: UP045
]
InductorSeed = Annotated[
    Optional[bool],  # noqa: UP045
    typer.Option("--inductor-seed/--no-inductor-seed", help="Seed from torch.compile's Triton code."),
]
FusionSeed = Annotated[
    Optional[bool],  # noqa: UP045
    typer.Option("--fusion-seed/--no-fusion-seed", help="Seed from the fusion generator's kernel."),
]
ConfirmProcesses = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        help="Most fresh processes per baseline column in the confirmation (default 10, at least 3): "
        "fewer end sooner, leaving more cells 'not shown'."
    ),
]


def confirm_rule(max_processes: int | None) -> StopRule:
    """The confirmation's stop rule for --confirm-processes (None: the default rule)."""
    from kernelbot.confirm.stoprule import StopRule
    from kernelbot.errors import ConfigError

    if max_processes is None:
        return StopRule()
    try:
        return StopRule(max_processes=max_processes)
    except ValueError as exc:
        raise ConfigError(f"--confirm-processes {max_processes}: {exc}") from None
