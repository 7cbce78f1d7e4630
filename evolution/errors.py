"""The search's refinements of the one error family in evaluators.errors (evolution may import the floor
package, never kernelbot): each is caught wherever its base is, and the CLI edge prints it on one line and
exits 1 like any other KernelbotError.

    ConfigError (evaluators.errors)
     └── SearchConfigError   a config file entry or flag of `kernelbot evolve` is invalid
    RunStateError (evaluators.errors)
     └── RunStoreError       a run directory is missing, locked by another process, or from another task
    KernelbotError (evaluators.errors)
     └── SearchError         the search cannot go on (no seed program, every evaluation infrastructure failed)
"""

from __future__ import annotations

from evaluators.errors import ConfigError, KernelbotError, RunStateError


class SearchConfigError(ConfigError):
    """Raised for an invalid search config entry (TOML file or command-line flag); the message names it."""


class RunStoreError(RunStateError):
    """Raised when a run directory cannot be created, opened, locked or resumed."""


class SearchError(KernelbotError):
    """Raised when the search cannot proceed, e.g. it has no seed program to mutate."""
