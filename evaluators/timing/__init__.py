"""The timing stage: reference and candidate timed in the same worker, in both regimes, each on its own
inputs.

What this package guarantees to its callers:
- `time_cases(ctx, cases, gpu_lock=...)` returns a `TimingReport`: per case and regime (`graph`: GPU time
  inside a captured CUDA graph; `wall`: launch-inclusive eager time) the reference's and the candidate's
  timings with CV, sample count and the paired speedup with its confidence interval; the roofline floor per
  case; and the findings of the post-timing re-check (fresh inputs judged by the correctness stage's
  check_call) and of the roofline check (a candidate measured faster than the hardware allows).
- The GPU lock (`gpu_lock`, a `GpuHold`) is held only while samples are taken; inputs, captures and the
  verdict happen outside it.
- Seeds are derived per purpose (`derive_seed`), so a re-run with the same config draws the same inputs.
- `placement` keeps workers off the cores reserved for wall timing and pins the timing thread onto its core;
  it imports no torch, so a worker can place itself before its heavy imports.

This module imports no submodule until one of its names is first used, for that last reason (the stage itself
needs torch). Code that runs in the sandboxed worker imports from the defining module instead
(evaluators.timing.stage): the harness snapshot records that module's namespace before the candidate is
imported, while a name resolved here later is not among what it recorded.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluators.timing.stage import (
        FOLLOW_UP_WARMUP_MS,
        CaseTimer,
        GpuHold,
        TimingReport,
        derive_seed,
        no_lock,
        time_cases,
    )

# Exported name -> the submodule that defines it.
_EXPORTS: dict[str, str] = {
    "FOLLOW_UP_WARMUP_MS": "stage",
    "CaseTimer": "stage",
    "GpuHold": "stage",
    "TimingReport": "stage",
    "derive_seed": "stage",
    "no_lock": "stage",
    "time_cases": "stage",
}

__all__ = [
    "FOLLOW_UP_WARMUP_MS",
    "CaseTimer",
    "GpuHold",
    "TimingReport",
    "derive_seed",
    "no_lock",
    "time_cases",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:  # also how `from evaluators.timing import wall` falls through to the submodule
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
