"""The search flags that `evolve`, `target` and `scan` share, as option types, so the three commands take
them with one spelling and one help text."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kernelbot.cli.application import BACKEND_HELP

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
