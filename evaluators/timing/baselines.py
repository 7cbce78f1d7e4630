"""What a candidate is timed against: the task's eager reference, torch.compile of it, or a named callable.

TimingConfig.baseline picks it; the correctness stage and the post-timing re-check always judge against the
eager reference, so a baseline only changes the other side of the timed pairs. A named callable
("call:module:qualname", e.g. the engine's current path for the op) must take the reference's arguments and
return what it returns; one that cannot be imported here makes the evaluation end with a reason starting
with UNAVAILABLE (a missing column, not a failed candidate). "rival" names another candidate's source,
loaded by the cascade (it needs the worker's scratch directory): see evaluators.pipeline.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

EAGER = "eager"
COMPILE = "compile"
# Another candidate for the task (TimingConfig.rival_source), imported by the worker's cascade beside the
# candidate (evaluators.pipeline): two programs of one search timed in one process, pair by pair.
RIVAL = "rival"
CALL_PREFIX = "call:"
UNAVAILABLE = "baseline unavailable"
# torch.compile compiles once per case's shapes and dtype (dynamic=False, as bench/vs_compile.py times it).
COMPILE_CACHE_SIZE = 256


class BaselineUnavailable(Exception):
    """The baseline cannot be built in this process (not importable, not callable, unknown name)."""


def call_spec(target: str) -> str:
    """The TimingConfig.baseline value naming `module:qualname`."""
    return f"{CALL_PREFIX}{target}"


def load_baseline(spec: str, eager: Callable[..., Any]) -> Callable[..., Any]:
    """The callable `spec` names, built around the task's eager reference where it is one."""
    if spec in ("", EAGER):
        return eager
    if spec == COMPILE:
        import torch
        import torch._dynamo
        import torch._inductor.config

        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, COMPILE_CACHE_SIZE)
        # Compiled in this process, not in a pool of compile workers the worker would have to start.
        torch._inductor.config.compile_threads = 1
        return torch.compile(eager, dynamic=False)
    if spec.startswith(CALL_PREFIX):
        return resolve_callable(spec[len(CALL_PREFIX) :])
    raise BaselineUnavailable(
        f"unknown baseline {spec!r} (known: {EAGER}, {COMPILE}, {CALL_PREFIX}module:name)"
    )


def resolve_callable(target: str) -> Callable[..., Any]:
    """`module:qualname` imported and looked up, or BaselineUnavailable saying why not."""
    module_name, _, qualname = target.partition(":")
    if not module_name or not qualname:
        raise BaselineUnavailable(f"{target!r} is not of the form module:qualname")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or the module failing at import (a missing extension)
        raise BaselineUnavailable(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from exc
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise BaselineUnavailable(f"{module_name} has no {qualname}") from None
    if not callable(obj):
        raise BaselineUnavailable(f"{target} is a {type(obj).__name__}, not a callable")
    return obj
