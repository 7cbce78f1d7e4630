"""Errors the user can fix, rooted in the floor package so every layer can raise them.

    KernelbotError                  the user can fix this (bad path, bad flag, bad task) -> exit 1
     ├── TaskError                  a task directory or task.toml is malformed
     │    └── DegenerateTaskError   the reference's outputs barely depend on its inputs
     ├── CandidateError             a candidate file does not parse or lacks the entry point
     │    └── EvolveBlockViolation  a child changed code outside its parent's EVOLVE-BLOCK
     └── BackendUnavailable         the asked-for backend cannot run here (no GPU, no MACA)

Anything else escaping to the CLI is a kernelbot bug and is reported as a crash.
`kernelbot.errors` re-exports this family and adds the orchestration errors.
"""

from __future__ import annotations


class KernelbotError(Exception):
    """Raised for a problem the user can fix; the CLI prints its message on one line and exits 1."""


class TaskError(KernelbotError):
    """Raised when a task directory, its task.toml, reference.py or inputs.py is unusable."""


class DegenerateTaskError(TaskError):
    """Raised when a task's outputs are (nearly) constant over seeds, so any constant would pass."""


class CandidateError(KernelbotError):
    """Raised when a candidate source cannot be read, parsed, or lacks the task's entry point."""


class EvolveBlockViolation(CandidateError):
    """Raised when a child candidate differs from its parent outside the EVOLVE-BLOCK markers."""


class BackendUnavailable(KernelbotError):
    """Raised when the selected evaluator backend cannot run on this machine."""
