"""kernelbot's error family. The base lives in the floor package (`evaluators.errors`) so that every
layer raises the same type; the CLI edge is the only place that catches it.

    KernelbotError
     ├── TaskError / DegenerateTaskError / CandidateError / EvolveBlockViolation / BackendUnavailable
     ├── ConfigError        bad flag, config file or environment variable
     ├── RunStateError      a run directory is missing, locked or from an incompatible version
     ├── ExtractionError    (extractors) the function cannot be found or closed over
     ├── GitError           a git operation failed; the message says what to check
     └── TransportError     an external service (LLM endpoint, forge) failed after retries
"""

from __future__ import annotations

from evaluators.errors import (
    BackendUnavailable,
    CandidateError,
    DegenerateTaskError,
    EvolveBlockViolation,
    KernelbotError,
    TaskError,
)


class ConfigError(KernelbotError):
    """Raised for a bad command-line flag, config file entry or environment variable."""


class RunStateError(KernelbotError):
    """Raised when a run directory cannot be opened, resumed or read."""


class GitError(KernelbotError):
    """Raised when a git command fails; the message names the command and what to check."""


class TransportError(KernelbotError):
    """Raised when an LLM endpoint or forge keeps failing after the configured retries."""


__all__ = [
    "BackendUnavailable",
    "CandidateError",
    "ConfigError",
    "DegenerateTaskError",
    "EvolveBlockViolation",
    "GitError",
    "KernelbotError",
    "RunStateError",
    "TaskError",
    "TransportError",
]
