"""Errors of the forge seam, atop kernelbot's family:

KernelbotError
 ├── ForgeError          the forge refused a request (not found, validation, ...); says what to check
 │    └── ForgeAuthError the token was refused (401/403) or is missing
 └── TransportError      the forge's API could not be reached (kernelbot.errors)
"""

from __future__ import annotations

from kernelbot.errors import KernelbotError


class ForgeError(KernelbotError):
    """Raised when the forge answers but refuses a request."""


class ForgeAuthError(ForgeError):
    """Raised when there is no token, or the forge refuses the one given."""
