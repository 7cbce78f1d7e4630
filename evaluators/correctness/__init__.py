"""The correctness stage and the comparison rules it judges by.

What this package guarantees to its callers:
- `check_correctness(ctx)` runs the candidate first on its own clone of fresh inputs and the
  reference after it (in float64 where it can), on every case, on hidden seeds and hidden sizes, and on
  repeated calls; a candidate passes only when every output and every argument it writes matches under the
  task's tolerances (`tolerances`) and compare rules (`compare`: exact, unordered rows, tied top-k ids in
  `ties`), and when it leaves untouched what the reference leaves untouched (`bits`).
- `check_call` judges one call the same way (the post-timing re-check uses it).
- A task whose outputs barely depend on its inputs is refused here (the degenerate check), so a constant
  kernel cannot pass.

This module imports no submodule until one of its names is first used: `tolerances` and `compare` are read
by code that needs no torch. Code that runs in the sandboxed worker imports from the defining module
(evaluators.correctness.stage), whose namespace the harness snapshot records before the candidate is
imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluators.correctness.stage import check_call, check_correctness

# Exported name -> the submodule that defines it.
_EXPORTS: dict[str, str] = {"check_call": "stage", "check_correctness": "stage"}

__all__ = ["check_call", "check_correctness"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:  # also how `from evaluators.correctness import compare` falls through to the submodule
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
