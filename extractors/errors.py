"""Errors raised by the extractors: the function cannot be found, closed over or given inputs.

KernelbotError (evaluators.errors)
 └── ExtractionError        the target cannot be located, closed over, captured or scanned
      ├── TargetNotFound    no function/method of that name (the message lists near misses)
      ├── AmbiguousTarget   several definitions match (the message lists them)
      ├── UnsupportedCode   the code uses a construct the extractor refuses (the message says which)
      └── SpecError         an input spec (TOML) is malformed (the message names the field)
"""

from __future__ import annotations

from evaluators.errors import KernelbotError


class ExtractionError(KernelbotError):
    """Raised when a target function cannot be turned into a Task; the message says what to change."""


class TargetNotFound(ExtractionError):
    """Raised when no module, class, function or method matches the requested target."""


class AmbiguousTarget(ExtractionError):
    """Raised when more than one definition matches the requested target."""


class UnsupportedCode(ExtractionError):
    """Raised when the target uses a construct the extractor refuses to translate (the reason is given)."""


class SpecError(ExtractionError):
    """Raised when an input spec TOML file cannot be read or has a bad field."""
