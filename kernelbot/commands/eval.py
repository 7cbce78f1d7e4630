"""`kernelbot eval TASK CANDIDATE`: judge one candidate and print the verdict."""

from __future__ import annotations

from pathlib import Path


def run(
    task: Path, candidate: Path, *, backend: str, as_json: bool, seeds: int, device: int, static: bool
) -> int:
    raise NotImplementedError("kernelbot eval is being built")
