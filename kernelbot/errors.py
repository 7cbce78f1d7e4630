"""kernelbot's view of the one error family. The family lives in the floor package (`evaluators.errors`)
so that every layer raises the same types; this module re-exports it and adds the orchestration errors. The
CLI edge is the only place that catches them.

    KernelbotError
     ├── TaskError / DegenerateTaskError / CandidateError / EvolveBlockViolation / BackendUnavailable
     ├── ConfigError        bad flag, config file or environment variable (evolution: SearchConfigError)
     ├── RunStateError      a run directory is missing, locked or from an incompatible version
     │                      (evolution: RunStoreError)
     ├── ExtractionError    (extractors) the function cannot be found or closed over
     ├── GitError           a git operation failed; the message says what to check
     └── TransportError     an external service (LLM endpoint, forge) failed after retries
"""

from __future__ import annotations

from evaluators.errors import (
    BackendUnavailable,
    CandidateError,
    ConfigError,
    DegenerateTaskError,
    EvolveBlockViolation,
    KernelbotError,
    RunStateError,
    TaskError,
    TransportError,
)


class GitError(KernelbotError):
    """Raised when a git command fails; the message names the command and what to check."""


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
