"""The one family of errors the user can fix, rooted in the floor package so every layer raises and catches
the same types (evolution and extractors may import this module; kernelbot re-exports it).

    KernelbotError                  the user can fix this (bad path, bad flag, bad task) -> exit 1
     ├── TaskError                  a task directory or task.toml is malformed
     │    └── DegenerateTaskError   the reference's outputs barely depend on its inputs
     ├── CandidateError             a candidate file does not parse or lacks the entry point
     │    └── EvolveBlockViolation  a child changed code outside its parent's EVOLVE-BLOCK
     ├── BackendUnavailable         the asked-for backend cannot run here (no GPU, no MACA)
     ├── ConfigError                a bad flag, config file entry or environment variable
     ├── RunStateError              a run directory is missing, locked, or from another task or version
     └── TransportError             an external service (LLM endpoint, forge) failed after retries

A layer above refines these where it has more to say (evolution.errors.SearchConfigError is a ConfigError,
kernelbot.errors.GitError a KernelbotError); the CLI edge (kernelbot.cli) is the one place that turns them
into exit codes. Anything else escaping to the CLI is a kernelbot bug and is reported as a crash (exit 3).
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


class ConfigError(KernelbotError):
    """Raised for a bad command-line flag, config file entry or environment variable."""


class RunStateError(KernelbotError):
    """Raised when a run directory cannot be created, opened, locked, resumed or read."""


class TransportError(KernelbotError):
    """Raised when an LLM endpoint or forge keeps failing after the configured retries."""
