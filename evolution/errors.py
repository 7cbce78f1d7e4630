"""Errors of the search the user can fix. They subclass the floor package's KernelbotError, so the CLI edge
prints them on one line and exits 1 (evolution/ may not import kernelbot/, hence their own module).

    KernelbotError
     ├── SearchConfigError   a config file entry or flag of `kernelbot evolve` is invalid
     ├── RunStoreError       a run directory is missing, locked by another process, or from another task
     └── SearchError         the search cannot go on (no seed program, every evaluation infrastructure failed)
"""

from __future__ import annotations

from evaluators.errors import KernelbotError


class SearchConfigError(KernelbotError):
    """Raised for an invalid search config entry (TOML file or command-line flag); the message names it."""


class RunStoreError(KernelbotError):
    """Raised when a run directory cannot be created, opened, locked or resumed."""


class SearchError(KernelbotError):
    """Raised when the search cannot proceed, e.g. it has no seed program to mutate."""
